import { clockNow } from '../../clock';
import { noteDue } from '../../db/sweep-marker';
import { collections, keys } from '../../db/keys';
import { ConditionFailed, getItem, putNew, queryPage } from '../../db/store';
import { phoneRules } from '../common/phone-field';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { moveCall } from './lifecycle';
import { resolveAgentVersion } from '../agents/versions';
import { personKey, type PersonKey } from '../agents/traffic-split';
import { newCallWrites, type AgentItem, type CallItem } from './service';
import { secrets } from '../../adapters/secrets';
import { ConcurrencyLimitError, ValidationError } from '../../errors';
import { transactWithSlot } from '../concurrency/slots';
import { logger } from '../../logger';
import { activeTraceparent } from '../../telemetry/tracing';
import type { AgentVersionPin } from '../agents/schemas';
import type { CallRouting } from './schemas';
import type { ContactFields } from '../conversations/variables';
import { askInboundWebhook, type InboundContact } from './inbound-routing';
import { STATUS_RANK } from './state';
import { answerOverflow, overflowAnswerOf } from './inbound-overflow';

/**
 * Calls to a number the platform holds. The number's organization comes from the global number
 * claim (`NUMBER#<e164>`), its agent from the number's routing webhook when it has one
 * (./inbound-routing.ts; docs/api.md, "Per-caller routing"), else, or when that fails, from the
 * number's `inbound_agent_id`. A number nobody holds,
 * a released one, one with no inbound agent or whose agent is not active is refused (the carrier
 * rejects the call: the caller hears busy and nothing is billed). Otherwise a call session is
 * created `ringing`, with the carrier's call id, and at once moved to `in_progress` through the
 * state machine (the answer: `call.started`, and the recovery sweep's due time is the agent's
 * maximum duration from now), because the instructions that follow answer the call into the
 * voice runtime, which ends it through the calls service.
 */
export interface IncomingCall {
  /** The number called (E.164), one of ours. */
  to: string;
  /** The caller, as the carrier reports it (E.164, or a placeholder for a withheld number). */
  from: string;
  /** The carrier's call id (Twilio: CallSid). */
  providerCallId: string;
  /** The carrier's name (`twilio`). */
  provider: string;
}

/** Why an incoming call gets no session: `refused_by_webhook` is said (`message`) and hung up, the others rejected unanswered. */
export type InboundRefusal = 'unknown_number' | 'no_inbound_agent' | 'agent_inactive' | 'refused_by_webhook' | 'concurrency_limit';

export type InboundAnswer =
  | { answer: 'stream'; call: CallItem }
  | { answer: 'reject'; reason: InboundRefusal; organization_id?: string; routing?: CallRouting; message?: string; call?: CallItem }
  /** At the concurrency limit, as the number's `overflow` says (inbound-overflow.ts): forwarded, or waiting on hold. */
  | { answer: 'forward'; to: string; call: CallItem }
  | { answer: 'queue'; call: CallItem };

/** How long the one-session marker of an incoming call is kept (a carrier retries within seconds). */
const INBOUND_MARKER_TTL_SECONDS = 86_400;

/** Agents in these statuses answer calls (UNSPECIFIED is how an agent created without a status starts). */
const ANSWERING = new Set([undefined, 'AGENT_STATUS_ACTIVE', 'AGENT_STATUS_UNSPECIFIED']);

/** The agent (and version, and variables) that answers: what the webhook chose, checked, or why not. */
type Resolved =
  | { ok: true; agentId: string; agent: AgentItem; agentVersion: number | null; trafficSplitId: string | null; variables: Record<string, string> }
  | { ok: false; refusal: InboundRefusal; error: string };

/** Resolves an agent of the organization to run, with a pin (undefined: published, else draft); an error says why not. */
async function resolveAnswering(
  orgId: string,
  agentId: string | null | undefined,
  pin: AgentVersionPin | undefined,
  variables: Record<string, string>,
  /** Who calls, for a traffic split (awaited after the agent's read, so the contact lookup runs beside it). */
  person: Promise<PersonKey | null>,
): Promise<Resolved> {
  if (!agentId) return { ok: false, refusal: 'no_inbound_agent', error: 'no agent: the number has no inbound_agent_id' };
  const agent = await getItem<AgentItem & { id: string }>(keys.agent(orgId, agentId));
  if (!agent) return { ok: false, refusal: 'agent_inactive', error: `agent_id: agent ${agentId} does not exist in this organization` };
  if (!ANSWERING.has(agent.status)) return { ok: false, refusal: 'agent_inactive', error: `agent_id: agent ${agentId} is not active` };
  try {
    const used = await resolveAgentVersion(orgId, { ...agent, id: agentId }, pin, undefined, await person);
    return { ok: true, agentId, agent: used.agent as AgentItem, agentVersion: used.agent_version, trafficSplitId: used.traffic_split_id, variables };
  } catch (err) {
    if (err instanceof ValidationError) return { ok: false, refusal: 'agent_inactive', error: err.message };
    throw err;
  }
}

/**
 * Creates the session of an incoming call, or says why it is refused. Without an inbound webhook
 * the number's agent answers (routing `number`). With one, the webhook is asked first (./inbound-routing.ts)
 * and its choice checked here: an agent of the organization that is active, a version it has; a
 * refusal is said and hung up with no session. A webhook that fails, times out or answers
 * something unusable is logged and the number's agent answers (routing `fallback` with the error).
 */
export async function createInboundCall(incoming: IncomingCall): Promise<InboundAnswer> {
  const claim = await getItem<{ organization_id: string; phone_number_id: string }>(keys.numberClaim(incoming.to));
  if (!claim) return { answer: 'reject', reason: 'unknown_number' };
  const orgId = claim.organization_id;
  const number = await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, claim.phone_number_id));
  if (!number || number.status !== 'active') return { answer: 'reject', reason: 'unknown_number', organization_id: orgId };
  const webhook = !!number.inbound_webhook_url && !!number.inbound_webhook_secret_sealed;
  if (!webhook && !number.inbound_agent_id) return { answer: 'reject', reason: 'no_inbound_agent', organization_id: orgId, routing: { source: 'number' } };

  // The secret is opened while the contact is looked up: both before the request goes out.
  const secret = webhook ? secrets().open(number.inbound_webhook_secret_sealed!) : undefined;
  secret?.catch(() => undefined); // awaited below; a failure is not left unhandled meanwhile
  // Without a webhook the number's agent is read beside the contact, as before routing existed.
  const contactRead = contactOf(orgId, incoming.from);
  // A traffic split sticks to the caller: their contact, else their number (a withheld one: no key, a random draw).
  const person = contactRead.then(async (c) => personKey({ contactId: c?.id, phone: (await phoneRules()).tryNormalizeE164(incoming.from) }));
  person.catch(() => undefined); // awaited through contactRead below; a failure is not left unhandled meanwhile
  const [contact, numberAgent] = await Promise.all([contactRead, webhook ? undefined : resolveAnswering(orgId, number.inbound_agent_id, undefined, {}, person)]);
  let routing: CallRouting = { source: 'number' };
  let resolved: Resolved | undefined;
  if (webhook) {
    const started = Date.now();
    const asked = await askInboundWebhook(number, { from: incoming.from, to: incoming.to, providerCallId: incoming.providerCallId }, contact, secret);
    if (asked.ok && asked.choice.reject) {
      logger.info('An incoming call was refused by its routing webhook', { organization_id: orgId, phone_number_id: number.id, provider_call_id: incoming.providerCallId });
      return { answer: 'reject', reason: 'refused_by_webhook', message: asked.choice.reject, organization_id: orgId, routing: { source: 'webhook' } };
    }
    if (asked.ok) resolved = await resolveAnswering(orgId, asked.choice.agentId ?? number.inbound_agent_id, asked.choice.agentVersion, asked.choice.variables, person);
    const error = asked.ok ? (resolved!.ok ? undefined : resolved!.error) : asked.error;
    if (error) {
      // Logged for the operator (the function's log) and recorded on the call as `routing.error`.
      logger.warn('The inbound routing webhook failed: the number\'s agent answers', {
        organization_id: orgId, phone_number_id: number.id, provider_call_id: incoming.providerCallId, error, elapsed_ms: Date.now() - started,
      });
      routing = { source: 'fallback', error };
      resolved = undefined;
    } else routing = { source: 'webhook' };
  }
  resolved ??= numberAgent ?? (await resolveAnswering(orgId, number.inbound_agent_id, undefined, {}, person));
  if (!resolved.ok) return { answer: 'reject', reason: resolved.refusal, organization_id: orgId, routing };

  const { item: made, writes, slot } = newCallWrites(orgId, {
    agentId: resolved.agentId,
    agent: resolved.agent,
    agentVersion: resolved.agentVersion,
    trafficSplitId: resolved.trafficSplitId,
    number,
    direction: 'inbound',
    from: incoming.from,
    to: incoming.to,
    contactId: contact?.id ?? null,
    campaignId: null,
    metadata: {},
    dynamicVariables: resolved.variables,
    status: 'ringing',
    provider: { name: incoming.provider, callId: incoming.providerCallId },
  });
  const item: CallItem = { ...made, routing };
  // One session per carrier call: a repeated webhook (a carrier retry) answers the session it made. Tracing on, it
  // keeps this request's trace context: the number's status callbacks, which carry none, continue it (carrier-events.ts).
  const traceParent = activeTraceparent();
  const marker = putNew({
    ...keys.inboundCall(incoming.provider, incoming.providerCallId), entity: 'INBOUND_CALL', organization_id: orgId, call_id: item.id,
    ...(traceParent ? { trace_parent: traceParent } : {}),
    ttl: Math.floor(clockNow().getTime() / 1000) + INBOUND_MARKER_TTL_SECONDS,
  });
  const counters = [{ orgId, collection: collections.calls, delta: 1 }];
  let answering = item;
  try {
    try {
      await transactWithSlot(orgId, [marker, putNew({ ...item }), ...writes], slot, counters);
    } catch (err) {
      if (!(err instanceof ConcurrencyLimitError)) throw err;
      // At the limit: what the number's overflow says (reject, forward, queue), each recorded as a call.
      const overflow = await answerOverflow(number, item, [marker, ...writes], counters);
      if (!('slotTaken' in overflow)) return overflow;
      answering = overflow.slotTaken; // queued, and a slot freed meanwhile: answered now
    }
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    // The carrier asked again about a call it already has a session for: the same answer.
    const made = await getItem<{ organization_id: string; call_id: string }>(keys.inboundCall(incoming.provider, incoming.providerCallId));
    const call = made ? await getItem<CallItem>(keys.call(made.organization_id, made.call_id)) : undefined;
    if (!call) throw err;
    return (await overflowAnswerOf(call)) ?? { answer: 'stream', call };
  }
  await noteDue('call-recovery', answering.due_at!); // the recovery sweep's marker (shared/db/sweep-marker.ts)
  const answered = await moveCall(answering, { status: 'in_progress', rank: STATUS_RANK.in_progress, answered: true }, { at: clockNow().toISOString() });
  return { answer: 'stream', call: answered.item };
}

/** The organization's contact with the caller's number, when there is one (its first, by id). */
async function contactOf(orgId: string, from: string): Promise<(InboundContact & ContactFields) | undefined> {
  const phone = (await phoneRules()).tryNormalizeE164(from);
  if (!phone) return undefined;
  const page = await queryPage<{ contact_id: string }>(
    { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: keys.contactSearchPrefix('phone', phone, true) },
    { limit: 1, offset: 0 },
  );
  const id = page.items[0]?.contact_id;
  if (!id) return undefined;
  const contact = await getItem<InboundContact & ContactFields>(keys.contact(orgId, id));
  return contact ? { ...contact, id, phone: contact.phone || phone } : undefined;
}

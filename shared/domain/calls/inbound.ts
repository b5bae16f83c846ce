import { clockNow } from '../../clock';
import { noteDue } from '../../db/sweep-marker';
import { collections, keys } from '../../db/keys';
import { ConditionFailed, getItem, putNew, queryPage, transact } from '../../db/store';
import { phoneRules } from '../common/phone-field';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { moveCall } from './lifecycle';
import { resolveAgentVersion } from '../agents/versions';
import { newCallWrites, type AgentItem, type CallItem } from './service';
import { STATUS_RANK } from './state';

/**
 * Calls to a number the platform holds. The number's organization comes from the global number
 * claim (`NUMBER#<e164>`), its agent from the number's `inbound_agent_id`. A number nobody holds,
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

export type InboundRefusal = 'unknown_number' | 'no_inbound_agent' | 'agent_inactive';

export type InboundAnswer = { answer: 'stream'; call: CallItem } | { answer: 'reject'; reason: InboundRefusal; organization_id?: string };

/** How long the one-session marker of an incoming call is kept (a carrier retries within seconds). */
const INBOUND_MARKER_TTL_SECONDS = 86_400;

/** Agents in these statuses answer calls (UNSPECIFIED is how an agent created without a status starts). */
const ANSWERING = new Set([undefined, 'AGENT_STATUS_ACTIVE', 'AGENT_STATUS_UNSPECIFIED']);

/** Creates the session of an incoming call answered by the number's agent, or says why it is refused. */
export async function createInboundCall(incoming: IncomingCall): Promise<InboundAnswer> {
  const claim = await getItem<{ organization_id: string; phone_number_id: string }>(keys.numberClaim(incoming.to));
  if (!claim) return { answer: 'reject', reason: 'unknown_number' };
  const orgId = claim.organization_id;
  const number = await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, claim.phone_number_id));
  if (!number || number.status !== 'active') return { answer: 'reject', reason: 'unknown_number', organization_id: orgId };
  if (!number.inbound_agent_id) return { answer: 'reject', reason: 'no_inbound_agent', organization_id: orgId };
  const [agent, contactId] = await Promise.all([getItem<AgentItem>(keys.agent(orgId, number.inbound_agent_id)), contactOf(orgId, incoming.from)]);
  if (!agent || !ANSWERING.has(agent.status)) return { answer: 'reject', reason: 'agent_inactive', organization_id: orgId };

  // The agent's published version answers, else its draft (agents/versions.ts).
  const used = await resolveAgentVersion(orgId, { ...agent, id: number.inbound_agent_id }, undefined);
  const { item, writes } = newCallWrites(orgId, {
    agentId: number.inbound_agent_id,
    agent: used.agent as AgentItem,
    agentVersion: used.agent_version,
    number,
    direction: 'inbound',
    from: incoming.from,
    to: incoming.to,
    contactId,
    campaignId: null,
    metadata: {},
    dynamicVariables: {},
    status: 'ringing',
    provider: { name: incoming.provider, callId: incoming.providerCallId },
  });
  // One session per carrier call: a repeated webhook (a carrier retry) answers the session it made.
  const marker = putNew({
    ...keys.inboundCall(incoming.provider, incoming.providerCallId), entity: 'INBOUND_CALL', organization_id: orgId, call_id: item.id,
    ttl: Math.floor(clockNow().getTime() / 1000) + INBOUND_MARKER_TTL_SECONDS,
  });
  try {
    await transact([marker, putNew({ ...item }), ...writes], [{ orgId, collection: collections.calls, delta: 1 }]);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    const made = await getItem<{ organization_id: string; call_id: string }>(keys.inboundCall(incoming.provider, incoming.providerCallId));
    const call = made ? await getItem<CallItem>(keys.call(made.organization_id, made.call_id)) : undefined;
    if (!call) throw err;
    return { answer: 'stream', call };
  }
  await noteDue('call-recovery', item.due_at!); // the recovery sweep's marker (shared/db/sweep-marker.ts)
  const answered = await moveCall(item, { status: 'in_progress', rank: STATUS_RANK.in_progress, answered: true }, { at: clockNow().toISOString() });
  return { answer: 'stream', call: answered.item };
}

/** The organization's contact with the caller's number, when there is one (its first, by id). */
async function contactOf(orgId: string, from: string): Promise<string | null> {
  const phone = (await phoneRules()).tryNormalizeE164(from);
  if (!phone) return null;
  const page = await queryPage<{ contact_id: string }>(
    { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: keys.contactSearchPrefix('phone', phone, true) },
    { limit: 1, offset: 0 },
  );
  return page.items[0]?.contact_id ?? null;
}

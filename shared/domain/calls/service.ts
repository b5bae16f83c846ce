import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { currentTraceId } from '../../telemetry/tracing';
import { noteDue } from '../../db/sweep-marker';
import { queue } from '../../adapters/queue';
import { collections, gsi1, gsi2, keys, Prefix, type CallIndexDimension } from '../../db/keys';
import { countRange, equalityFilter, getKeyed, getMany, idBounds, queryRangePage, type RangeQuery } from '../../db/filtered-query';
import { ConditionFailed, getItem, putNew, queryPage, readCounter, transact, type CounterDelta, type PageRequest, type TransactItem } from '../../db/store';
import { ConcurrencyLimitError, UnprocessableError, ValidationError } from '../../errors';
import { resolveAgentVersion } from '../agents/versions';
import { activeSplit, personKey, type SplitOnAgent } from '../agents/traffic-split';
import { listResult } from '../common/list-result';
import { clockNow } from '../../clock';
import { getOr404 } from '../common/collection';
import { blockOf, DNC_MESSAGES } from '../dnc/service';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { recordingUrl } from './recordings';
import type { Call, CallAnalysisValue, CallListInput, CallStatus, CreateCallInput, DisconnectionReason, Transcript } from './schemas';
import { STATUS_RANK } from './state';
import { segmentsOf, withSpeakingAgents, type Segment } from '../conversations/segments';
import { transferView, type TransferItem } from './transfer-item';
import { latencySummary } from '../conversations/latency';
import { acquireSlotWrites, failedWrite, limitReached, queuePosition, slotKindOf, transactWithSlot, waitWrites, type SlotKind } from '../concurrency/slots';
import { accepted, type Accepted } from '../common/accepted';
import { dispatchEvents, newEvent } from '../events/publish';
import { DEFAULT_QUEUE_TIMEOUT_SECONDS } from './schemas';

/**
 * Call sessions.
 *
 * - A call is one item `CALL#<id>` in the organization's partition (UUID v7 ids sort by creation
 *   time), counted by COUNT#calls. It carries gsi1 `ORG#<org>#CALL#STATUS#<status>` → id (the
 *   status filter; moved by every state change) and, while it is not ended, an entry in the sparse
 *   calls-due index on gsi2 (`CALLDUE#<hour>#<shard>`), which the recovery sweep reads.
 * - Index entries `CALLIDX#agent|campaign|contact#<value>#<id>` are written once with the call
 *   (those members never change), so the agent, campaign and contact filters are ranges too.
 * - What the call needs later (the agent's ring and maximum durations, begin message and analysis
 *   settings, the number's per-minute price) is copied onto the item when the call is created:
 *   a call runs with the settings it was placed with, and no step re-reads the agent.
 * - The state machine and everything a move writes are in lifecycle.ts.
 */

export const ENTITY = 'CALL';
/** Added to ring and maximum duration before the recovery sweep may end a call: queue waits, carrier lag. */
export const RECOVERY_MARGIN_MS = 5 * 60_000;
/** Partitions per due hour of the calls-due index, so a busy hour does not write to one index partition. */
export const CALL_DUE_SHARDS = 4;

export interface CallItem extends Omit<Call, 'queue_position' | 'recording_url' | 'channel' | 'from_phone_number' | 'to_phone_number' | 'agent_version' | 'transfers' | 'segments' | 'latency' | 'trace_id' | 'traffic_split_id'> {
  /** The traffic split that drew the call's version (agents/traffic-split.ts); absent: none. */
  traffic_split_id?: string | null;
  /** The trace the call was created in; absent when tracing was off (the API shows null). */
  trace_id?: string | null;
  /** Transfers to a person (calls/warm-transfer.ts); absent: none. */
  transfers?: TransferItem[];
  /** Absent on calls stored before web calls: `phone`. */
  channel?: Call['channel'];
  /** Stored once the call was handed off to another agent (calls/handoffs.ts); absent: the starting agent's one segment. */
  segments?: Segment[];
  /** '' on a web call (the API shows null). */
  from_phone_number: string;
  to_phone_number: string;
  /** The agent version the call runs (agents/versions.ts): null for the draft; absent on calls stored before versions. */
  agent_version?: number | null;
  pk: string;
  sk: string;
  entity: string;
  version: number;
  gsi1pk: string;
  gsi1sk: string;
  gsi2pk?: string;
  gsi2sk?: string;
  status_rank: number;
  /** When the recovery sweep may end the call; removed with the end. */
  due_at?: string;
  recording_key?: string;
  provider?: string;
  provider_call_id?: string;
  /** Set once by the place job before it dials: a redelivered job never dials twice. */
  dial_claimed_at?: string;
  /** Set by the place job once a carrier whose events it queues itself (simulated) has its whole course queued. */
  course_queued_at?: string;
  /** Set once the after-end steps (contact history, analysis queued) are done. */
  finalized_at?: string;
  phone_number_id: string;
  price_per_minute: number;
  ring_duration_ms: number;
  max_call_duration_ms: number;
  /** The agent's answering-machine detection when the call was created (absent on older calls: off). */
  voicemail_detection?: { timeout_ms: number };
  begin_message: string;
  analysis_model: string | null;
  analysis_prompt: string | null;
  /** The concurrency slot the call holds until it ends (concurrency/slots.ts); absent on calls stored before slots, and while the call waits for one. */
  slot_kind?: SlotKind;
  /** Set while the call waits in the organization's queue for a slot (`"queue": true`): when it ends `queue_timeout`. */
  waiting_until?: string;
  /** An incoming call forwarded at the concurrency limit (inbound-overflow.ts): where to (a retried carrier webhook is answered the same). */
  overflow_forwarded_to?: string;
  /** A campaign call: the campaign contact it dials and the attempt (its outcome goes back to them). */
  campaign_contact_id?: string;
  campaign_attempt?: number;
}

/** The API's view of a call: storage attributes dropped, a fresh recording link. */
export async function view(item: CallItem): Promise<Call> {
  return {
    id: item.id,
    organization_id: item.organization_id,
    agent_id: item.agent_id,
    agent_version: typeof item.agent_version === 'number' ? item.agent_version : null,
    traffic_split_id: item.traffic_split_id ?? null,
    campaign_id: item.campaign_id ?? null,
    contact_id: item.contact_id ?? null,
    direction: item.direction,
    channel: item.channel ?? 'phone',
    from_phone_number: item.from_phone_number || null,
    to_phone_number: item.to_phone_number || null,
    status: item.status,
    ...(isWaiting(item) ? { queue_position: await queuePosition(item.organization_id, item.id) } : {}),
    disconnection_reason: item.disconnection_reason ?? null,
    error_message: item.error_message ?? null,
    started_at: item.started_at ?? null,
    answered_at: item.answered_at ?? null,
    ended_at: item.ended_at ?? null,
    duration_sec: item.duration_sec ?? 0,
    transcript: withSpeakingAgents(item.transcript ?? [], segmentsOf({ ...item, started_at: item.answered_at ?? item.started_at }), item.answered_at ?? item.started_at),
    // Computed from the stored lines once the call has ended, whatever ended it (docs/api.md, "Latency of every reply").
    latency: item.status === 'ended' ? latencySummary((item.transcript ?? []).map((t) => (t.role === 'agent' ? t.latency_ms : undefined))) : null,
    tool_calls: item.tool_calls ?? [],
    segments: segmentsOf({ ...item, started_at: item.answered_at ?? item.started_at }),
    transfers: (item.transfers ?? []).map(transferView),
    recording_url: await recordingUrl(item.recording_key),
    analysis: item.analysis ?? null,
    analysis_error: item.analysis_error ?? null,
    metadata: item.metadata ?? {},
    dynamic_variables: item.dynamic_variables ?? {},
    ...(item.routing ? { routing: item.routing } : {}),
    trace_id: item.trace_id ?? null,
    created_at: item.created_at,
    updated_at: item.updated_at,
  };
}

/** Whether a call waits in its organization's queue for a concurrency slot (created with `"queue": true` at the limit, not placed yet). */
export const isWaiting = (item: Pick<CallItem, 'status' | 'waiting_until'>) => item.status === 'queued' && !!item.waiting_until;

/** How often the recovery sweep looks at a waiting call (promotes its organization's queue, ends it at its deadline). */
export const WAITING_CHECK_MS = 60_000;

/** The calls-due entry of a waiting call: its deadline, or sooner, so the sweep places it if a slot's promotion was lost. */
export const waitingDue = (orgId: string, callId: string, now: string, deadline: string) =>
  dueEntry(orgId, callId, new Date(Math.min(Date.parse(deadline), Date.parse(now) + WAITING_CHECK_MS)).toISOString());

/** The gsi1 partition of one call status. */
export const statusPartition = (orgId: string, status: CallStatus) => gsi1.byStatus(orgId, ENTITY, status);

/** The calls-due index attributes for a call that may be ended by the sweep at `dueAt`. */
export function dueEntry(orgId: string, callId: string, dueAt: string) {
  const shard = parseInt(callId.slice(-1), 16) % CALL_DUE_SHARDS;
  return { due_at: dueAt, gsi2pk: gsi2.callsDue(dueAt.slice(0, 13), shard), gsi2sk: gsi2.callDueEntry(dueAt, orgId, callId) };
}

/** The agent's settings a new call copies. */
export interface AgentItem {
  status?: string;
  ring_duration_ms?: number;
  max_call_duration_ms?: number;
  begin_message?: string;
  enable_voicemail_detection?: boolean;
  voicemail_detection_timeout_ms?: number;
  post_call_analysis_model?: string;
  analysis_summary_prompt?: string;
}

interface ClaimItem {
  organization_id: string;
  phone_number_id: string;
}

/** What another area (campaigns) adds when it creates a call. */
export interface CallOrigin {
  campaignId?: string;
  /**
   * The campaign contact and attempt a campaign call dials: kept on the call for its outcome, and
   * an attempt marker is written with the call only if absent, so one attempt never gets two calls
   * (a second creation fails with ConditionFailed; the campaign dialer then answers the first call).
   */
  campaignAttempt?: { campaignContactId: string; attempt: number };
  /** The id of the `from_phone_number` the caller already knows (a campaign's): read with the other checks, not after the claim. */
  phoneNumberId?: string;
  /**
   * A campaign call whose campaign pins no version (campaign-calls.ts): `agent_version` is the
   * campaign's fixed version, used only when the agent has no traffic split; with one, the version is
   * drawn for the contact, or `keep` (a retry: the first attempt's version and split).
   */
  splitDraw?: { keep?: { version: number; splitId: string } };
  /**
   * POST /calls's Idempotency-Key: a marker written with the call names it, so a retry of a request
   * that failed after its write (the idempotency record is released on any failure) answers that call.
   */
  requestKey?: string;
}

/** The marker of a POST /calls with an Idempotency-Key (keys.callRequest). */
const requestMarker = (orgId: string, requestKey: string) => keys.callRequest(orgId, createHash('sha256').update(requestKey).digest('hex'));
/** How long a request's marker is kept: as long as its idempotency record (a day). */
const REQUEST_MARKER_TTL_SECONDS = 86_400;

/**
 * What creating a call checks, in one strongly consistent BatchGetItem: the agent, the number's
 * claim, the contact, the destination's do-not-call entry, and (when the caller knows them) the
 * number the claim should name and a campaign attempt's marker.
 */
async function readCallInputs(orgId: string, input: CreateCallInput, origin: CallOrigin) {
  const attempt = origin.campaignAttempt;
  const wanted = {
    agent: keys.agent(orgId, input.agent_id),
    claim: keys.numberClaim(input.from_phone_number),
    listed: keys.dnc(orgId, input.to_phone_number),
    ...(input.contact_id ? { contact: keys.contact(orgId, input.contact_id) } : {}),
    ...(origin.phoneNumberId ? { number: keys.phoneNumber(orgId, origin.phoneNumberId) } : {}),
    ...(attempt && origin.campaignId ? { marker: keys.campaignAttemptCall(orgId, origin.campaignId, attempt.campaignContactId, attempt.attempt) } : {}),
    ...(origin.requestKey ? { request: requestMarker(orgId, origin.requestKey) } : {}),
  };
  const item = await getKeyed(Object.values(wanted));
  return {
    agent: item<AgentItem>(wanted.agent),
    claim: item<ClaimItem>(wanted.claim),
    contact: wanted.contact && item<{ opt_out?: boolean }>(wanted.contact),
    number: wanted.number && item<PhoneNumberItem>(wanted.number),
    listed: item(wanted.listed) !== undefined,
    marker: wanted.marker && item(wanted.marker),
    request: wanted.request && item<{ call_id: string }>(wanted.request),
  };
}

/**
 * Creates a call `queued` and queues the job that places it (call-place). Checks, each a 400
 * naming the field: the agent is the organization's, `from_phone_number` is an active number it
 * holds, `contact_id` its contact. A destination on the do-not-call list, or a contact that opted
 * out, is a 422 with `error.details.reason` (`do_not_call`, `opt_out`), and nothing is written.
 * At the organization's concurrency limit a 429, or with `queue: true` the call waits for a slot
 * (createOrWait; its view then has `queue_position`).
 */
export async function createCall(orgId: string, input: CreateCallInput, origin: CallOrigin = {}): Promise<Call> {
  const { agent, claim, contact, number: known, listed, marker: placed, request } = await readCallInputs(orgId, input, origin);
  // An attempt already placed: the same answer as its marker's put failing in the transaction below.
  if (placed) throw new ConditionFailed('campaign attempt already has a call');
  // The same request made this call before and failed after writing it: that call, finished.
  if (request) return finishRequested(orgId, request.call_id);
  const issues = [];
  if (!agent) issues.push({ path: 'agent_id', message: 'is not an agent of this organization' });
  const number = claim?.organization_id !== orgId
    ? undefined
    : claim.phone_number_id === origin.phoneNumberId ? known : await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, claim.phone_number_id));
  if (!number || number.status !== 'active') issues.push({ path: 'from_phone_number', message: 'is not an active phone number of this organization' });
  if (input.contact_id && !contact) issues.push({ path: 'contact_id', message: 'is not a contact of this organization' });
  if (issues.length) throw new ValidationError(`Validation failed: ${issues.map((i) => `${i.path} ${i.message}`).join('; ')}`, issues);

  const blocked = blockOf(contact, listed);
  if (blocked) {
    throw new UnprocessableError(`The call cannot be placed: ${DNC_MESSAGES[blocked]}`, { reason: blocked, to_phone_number: input.to_phone_number });
  }

  // The version the call runs: pinned (a campaign pins the one it started with), else drawn by the agent's traffic split for the contact or callee, else published, else the draft.
  const keep = origin.splitDraw?.keep;
  const draws = !!origin.splitDraw && !keep && !!activeSplit(agent as SplitOnAgent);
  const used = await resolveAgentVersion(orgId, { ...agent!, id: input.agent_id }, keep ? keep.version : draws ? undefined : input.agent_version, undefined, personKey({ contactId: input.contact_id, phone: input.to_phone_number }));
  const { item, writes, slot } = newCallWrites(orgId, {
    agentId: input.agent_id,
    agent: used.agent as AgentItem,
    agentVersion: used.agent_version,
    trafficSplitId: keep?.splitId ?? used.traffic_split_id,
    number: number!,
    direction: 'outbound',
    from: input.from_phone_number,
    to: input.to_phone_number,
    contactId: input.contact_id ?? null,
    campaignId: origin.campaignId ?? null,
    metadata: input.metadata ?? {},
    dynamicVariables: input.dynamic_variables ?? {},
    status: 'queued',
  });
  const id = item.id;
  const attempt = origin.campaignAttempt;
  const marker = attempt && item.campaign_id
    ? [putNew({ ...keys.campaignAttemptCall(orgId, item.campaign_id, attempt.campaignContactId, attempt.attempt), entity: 'CAMPAIGN_ATTEMPT', call_id: id, created_at: item.created_at })]
    : [];
  const campaignFields = attempt ? { campaign_contact_id: attempt.campaignContactId, campaign_attempt: attempt.attempt } : {};
  Object.assign(item, campaignFields);
  const requested = origin.requestKey
    ? [putNew({ ...requestMarker(orgId, origin.requestKey), entity: 'CALL_REQUEST', call_id: id, ttl: Math.floor(Date.parse(item.created_at) / 1000) + REQUEST_MARKER_TTL_SECONDS })]
    : [];
  const main = [putNew({ ...item }), ...writes, ...marker, ...requested];
  const counters = [{ orgId, collection: collections.calls, delta: 1 }];
  try {
    if (input.queue) {
      const waiting = await createOrWait(orgId, item, main, counters, input.queue_timeout_seconds ?? DEFAULT_QUEUE_TIMEOUT_SECONDS);
      if (waiting) return view(waiting);
    } else {
      await transactWithSlot(orgId, main, slot, counters);
    }
  } catch (err) {
    // The same request racing itself (a retry while the first still ran): the call the other one wrote.
    if (!(err instanceof ConditionFailed) || !origin.requestKey) throw err;
    const made = await getItem<{ call_id: string }>(requestMarker(orgId, origin.requestKey));
    if (!made) throw err;
    return finishRequested(orgId, made.call_id);
  }
  // The recovery sweep's marker falls to this call's due time if it is the earliest (shared/db/sweep-marker.ts).
  await noteDue('call-recovery', item.due_at!);
  // If this send fails the call stays queued and the recovery sweep ends it `failed` when due.
  await queue().send('call-place', { organization_id: orgId, call_id: id });
  return view(item);
}

/**
 * A call an earlier attempt of the same request wrote: its remaining steps done again (each is
 * idempotent: the sweep's marker only falls, call-place dials a call at most once) and its view.
 */
async function finishRequested(orgId: string, callId: string): Promise<Call> {
  const call = await getItem<CallItem>(keys.call(orgId, callId));
  if (!call) throw new ConditionFailed('the request\'s call is gone');
  if (call.status !== 'ended') await noteDue('call-recovery', call.due_at!);
  if (call.status === 'queued' && !isWaiting(call) && !call.dial_claimed_at) await queue().send('call-place', { organization_id: orgId, call_id: callId });
  return view(call);
}

/** How often a `"queue": true` call tries again when slots free between its refusal and its wait (each try is a race lost). */
const WAIT_ATTEMPTS = 5;

/**
 * A `"queue": true` call: takes a slot when one is free and no call of the organization waits
 * (then undefined: the caller places it as any call); else it is written waiting instead, in one
 * transaction: the call `queued` without a slot, `waiting_until` its deadline, due in the
 * calls-due index (queued-calls.ts's sweep step), its FIFO entry and the counter's `queued`
 * (concurrency/slots.ts waitWrites), and `call.queued`. Not sent to call-place: a released slot
 * places the organization's oldest waiting call (queued-calls.ts promoteWaiting). `main[0]` is the
 * call's put (replaced by the waiting call's); an incoming call queued by its number's overflow
 * waits the same way (inbound-overflow.ts).
 */
export async function createOrWait(orgId: string, item: CallItem, main: TransactItem[], counters: CounterDelta[], timeoutSeconds: number): Promise<CallItem | undefined> {
  for (let attempt = 0; attempt < WAIT_ATTEMPTS; attempt++) {
    try {
      await transactWithSlot(orgId, main, acquireSlotWrites(orgId, item.id, item.slot_kind!, item.due_at!, item.created_at, { unlessWaiting: true }), counters);
      return undefined;
    } catch (err) {
      if (!(err instanceof ConcurrencyLimitError)) throw err;
    }
    const { slot_kind: _kind, ...rest } = item;
    const waiting: CallItem = { ...rest, waiting_until: new Date(Date.parse(item.created_at) + timeoutSeconds * 1000).toISOString() };
    Object.assign(waiting, waitingDue(orgId, item.id, item.created_at, waiting.waiting_until!));
    // The event carries the call as it waits; its place in the queue moves, so GET /calls/{id} reads it.
    const queued = newEvent(orgId, 'call.queued', { ...(await view({ ...waiting, waiting_until: undefined })) });
    const writes = [putNew({ ...waiting }), ...main.slice(1), ...waitWrites(orgId, item.id, item.created_at), queued.write];
    try {
      await transact(writes, counters);
    } catch (err) {
      // A slot freed meanwhile and nobody waits: try for it again.
      if (err instanceof ConditionFailed && failedWrite(err) === main.length + 1) continue;
      throw err;
    }
    await noteDue('call-recovery', waiting.due_at!);
    await dispatchEvents([queued.event]);
    return waiting;
  }
  throw await limitReached(orgId);
}

/** POST /calls: the call, answered 202 when it waits for a concurrency slot (`"queue": true` at the limit). */
export async function requestCall(orgId: string, input: CreateCallInput, requestKey?: string): Promise<Call | Accepted<Call>> {
  const call = await createCall(orgId, input, requestKey ? { requestKey } : {});
  return call.queue_position !== undefined ? accepted(call) : call;
}

/** What a new call is made of, outbound or inbound. */
export interface NewCall {
  agentId: string;
  /** The agent as the call runs it (a published version's fields, or the draft). */
  agent: AgentItem;
  /** Which version that is (null: the draft). */
  agentVersion?: number | null;
  /** The traffic split that drew it (null: none). */
  trafficSplitId?: string | null;
  /** The organization's number; null on a web call (no carrier, no number, no per-minute price). */
  number: PhoneNumberItem | null;
  /** Default `phone`. */
  channel?: Call['channel'];
  direction: 'outbound' | 'inbound';
  from: string;
  to: string;
  contactId: string | null;
  campaignId: string | null;
  metadata: Record<string, unknown>;
  dynamicVariables: Record<string, string>;
  status: 'queued' | 'ringing';
  /** A call the carrier already has (inbound): its provider and call id, and when it started. */
  provider?: { name: string; callId: string };
}

/**
 * A new call item (with the agent's settings copied onto it) and its index entries, not written:
 * the caller adds its own items to the same transaction.
 */
export function newCallWrites(orgId: string, c: NewCall): { item: CallItem; writes: ReturnType<typeof putNew>[]; slot: ReturnType<typeof putNew>[] } {
  const { agent, number } = c;
  // The id's time is the creation time, to the millisecond: the `from`/`to` filters bound ids by it.
  const created = clockNow();
  const id = uuidv7({ msecs: created.getTime() });
  const now = created.toISOString();
  const ring = agent.ring_duration_ms ?? 30_000;
  const max = agent.max_call_duration_ms ?? 1_800_000;
  const call: Omit<CallItem, keyof ReturnType<typeof keys.call> | 'entity' | 'version' | 'gsi1pk' | 'gsi1sk' | 'status_rank' | 'phone_number_id' | 'price_per_minute' | 'ring_duration_ms' | 'max_call_duration_ms' | 'begin_message' | 'analysis_model' | 'analysis_prompt'> = {
    id,
    organization_id: orgId,
    agent_id: c.agentId,
    agent_version: c.agentVersion ?? null,
    ...(c.trafficSplitId ? { traffic_split_id: c.trafficSplitId } : {}),
    campaign_id: c.campaignId,
    contact_id: c.contactId,
    direction: c.direction,
    channel: c.channel ?? 'phone',
    from_phone_number: c.from,
    to_phone_number: c.to,
    status: c.status,
    disconnection_reason: null,
    error_message: null,
    started_at: c.provider ? now : null,
    answered_at: null,
    ended_at: null,
    duration_sec: 0,
    transcript: [],
    tool_calls: [],
    analysis: null,
    analysis_error: null,
    metadata: c.metadata,
    dynamic_variables: c.dynamicVariables,
    trace_id: currentTraceId(),
    created_at: now,
    updated_at: now,
  };
  const item: CallItem = {
    ...keys.call(orgId, id),
    entity: ENTITY,
    version: 1,
    ...call,
    gsi1pk: statusPartition(orgId, c.status),
    gsi1sk: id,
    ...dueEntry(orgId, id, new Date(Date.parse(now) + ring + max + RECOVERY_MARGIN_MS).toISOString()),
    status_rank: STATUS_RANK[c.status],
    ...(c.provider ? { provider: c.provider.name, provider_call_id: c.provider.callId } : {}),
    phone_number_id: number?.id ?? '',
    price_per_minute: (c.direction === 'inbound' ? number?.per_minute_price_inbound : number?.per_minute_price_outbound) ?? 0,
    ring_duration_ms: ring,
    max_call_duration_ms: max,
    // Detection runs on calls we place (the carrier tells a machine from a person when it answers).
    ...(agent.enable_voicemail_detection && c.direction === 'outbound' ? { voicemail_detection: { timeout_ms: agent.voicemail_detection_timeout_ms ?? 5_000 } } : {}),
    begin_message: agent.begin_message ?? '',
    analysis_model: agent.post_call_analysis_model || null,
    analysis_prompt: agent.analysis_summary_prompt || null,
    slot_kind: slotKindOf({ channel: c.channel, direction: c.direction }),
  };
  const dims: [CallIndexDimension, string | null][] = [['agent', call.agent_id], ['campaign', call.campaign_id], ['contact', call.contact_id]];
  const writes = dims
    .filter((d): d is [CallIndexDimension, string] => !!d[1])
    .map(([dim, value]) =>
      putNew({ ...keys.callIndex(orgId, dim, value, id), entity: 'CALL_INDEX', call_id: id, agent_id: call.agent_id, campaign_id: call.campaign_id, contact_id: call.contact_id }),
    );
  // The call's concurrency slot, taken in the same transaction (transactWithSlot: 429 at the limit).
  return { item, writes, slot: acquireSlotWrites(orgId, id, item.slot_kind!, item.due_at!, now) };
}

/** The call's item as stored (carrier id, voice fields), or undefined: the voice runtime's read of a call. */
export function findCallItem(orgId: string, id: string): Promise<CallItem | undefined> {
  return getItem<CallItem>(keys.call(orgId, id));
}

export async function getCall(orgId: string, id: string): Promise<Call> {
  return view(await getOr404<CallItem>(keys.call(orgId, id), 'Call', id));
}

/**
 * Calls, newest first. Unfiltered: the organization's CALL# items, total from COUNT#calls. With
 * filters, one key range is read and the other filters apply to it (as every filtered list here):
 * `status` → the status partition of gsi1; else `contact_id`, `campaign_id` or `agent_id` → that
 * value's index entries (then the calls by BatchGetItem); else the CALL# items. `from`/`to` bound
 * the range itself (ids are UUID v7). `meta.total` is then exact, counted over the same range and
 * filter (Select COUNT), so its cost grows with the range read.
 */
export async function listCalls(orgId: string, q: CallListInput) {
  if (q.from && q.to && q.to < q.from) throw ValidationError.field('to', 'must not be before from');
  const { low, high } = idBounds(q.from, q.to);
  const paging: PageRequest = { limit: q.limit, offset: q.offset, cursor: q.cursor };
  const dims: [CallIndexDimension, string | undefined][] = [['contact', q.contact_id], ['campaign', q.campaign_id], ['agent', q.agent_id]];
  const given = dims.filter((d): d is [CallIndexDimension, string] => !!d[1]);

  if (!given.length && !q.status && !q.from && !q.to) {
    const [page, total] = await Promise.all([
      queryPage<CallItem>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.call, descending: true }, paging),
      readCounter(orgId, collections.calls),
    ]);
    return listResult({ items: await Promise.all(page.items.map(view)), nextCursor: page.nextCursor }, total, paging);
  }

  // Equality filters on the members the key range does not already fix.
  const memberFilters = (skip?: CallIndexDimension) => given.filter(([dim]) => dim !== skip).map(([dim, value]) => [`${dim}_id`, value] as [string, string]);

  if (q.status) {
    const range: RangeQuery = {
      index: 'gsi1', pkName: 'gsi1pk', pkValue: statusPartition(orgId, q.status), skName: 'gsi1sk',
      skFrom: low, skTo: high, descending: true, filter: equalityFilter(memberFilters()),
    };
    const [page, total] = await Promise.all([queryRangePage<CallItem>(range, paging), countRange(range)]);
    return listResult({ items: await Promise.all(page.items.map(view)), nextCursor: page.nextCursor }, total, paging);
  }

  if (given.length) {
    const [dim, value] = given[0]!;
    const prefix = keys.callIndexPrefix(dim, value);
    const range: RangeQuery = {
      pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk',
      skFrom: `${prefix}${low}`, skTo: `${prefix}${high}`, descending: true, filter: equalityFilter(memberFilters(dim)),
    };
    const [page, total] = await Promise.all([queryRangePage<{ call_id: string }>(range, paging), countRange(range)]);
    const calls = await getMany<CallItem>(page.items.map((e) => keys.call(orgId, e.call_id)));
    return listResult({ items: await Promise.all(calls.map(view)), nextCursor: page.nextCursor }, total, paging);
  }

  const range: RangeQuery = {
    pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skFrom: `${Prefix.call}${low}`, skTo: `${Prefix.call}${high}`, descending: true,
  };
  const [page, total] = await Promise.all([queryRangePage<CallItem>(range, paging), countRange(range)]);
  return listResult({ items: await Promise.all(page.items.map(view)), nextCursor: page.nextCursor }, total, paging);
}

export type { CallAnalysisValue, DisconnectionReason, Transcript };

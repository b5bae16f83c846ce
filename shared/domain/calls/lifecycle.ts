import { withTraceQuery } from '../../telemetry/tracing';
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { queue } from '../../adapters/queue';
import { telephony } from '../../adapters/telephony';
import type { CallStatusEvent } from '../../adapters/telephony/port';
import { clockMs, clockNow } from '../../clock';
import { config } from '../../config';
import { collections, keys } from '../../db/keys';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { ConditionFailed, deleteExisting, getItem, ignoreConditionFailed, transact, updateExisting, type CounterDelta } from '../../db/store';
import { NotFoundError } from '../../errors';
import { logger } from '../../logger';
import { callChargeId, chargeWrite } from '../billing/service';
import { recordContactCall } from '../contacts/calls';
import { blockOf, DNC_MESSAGES, dialBlock, type DialBlock } from '../dnc/service';
import { getKeyed } from '../../db/filtered-query';
import { dispatchEvents, newEvent, type PlatformEvent } from '../events/publish';
import { campaignCallEnded } from './campaign-calls';
import { failedWrite, leaveQueueWrites, releaseSlotWrites } from '../concurrency/slots';
import { promoteWaiting } from './queued-calls';
import { syncConversationStats } from '../analytics/counters';
import type { Segment } from '../conversations/segments';
import type { CallToolCalls, Transcript } from './schemas';
import { dueEntry, isWaiting, RECOVERY_MARGIN_MS, statusPartition, view, type CallItem } from './service';
import type { VoiceFields } from './state';
import { advances, billableMinutes, STATUS_RANK, VOICE_LOST_MESSAGE, type Move } from './state';

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** What a move knows beyond the new status. */
export interface MoveDetails {
  /** When it happened (the carrier's time). */
  at: string;
  /** Seconds connected, when the carrier says. */
  durationSec?: number;
  transcript?: Transcript;
  /** The tools the agent called (kept with the transcript). */
  toolCalls?: CallToolCalls;
  recordingKey?: string;
  errorMessage?: string;
  providerCallId?: string;
  /** The end was measured by the voice runtime's stream (no carrier figure yet): a later carrier duration corrects it. */
  durationFromStream?: boolean;
  /** The call's segments when its agent handed it off (a simulated call's conversation): written with the end, so `call.ended` has them. */
  segments?: Segment[];
}

export interface MoveResult {
  moved: boolean;
  item: CallItem;
}

/** How long after an end the recovery sweep may finish after-end steps left undone (normally done at once). */
export const FINALIZE_GRACE_MS = 60_000;

const ENDED: Move = { status: 'ended', rank: STATUS_RANK.ended, answered: false };

/** The runtime's recorded error, or that a stream was admitted and never recorded (the runtime died mid-call). */
const voiceError = (item: CallItem & VoiceFields): { error_message?: string } =>
  item.voice_error_message ? { error_message: item.voice_error_message } : item.voice_stream_at && !item.voice_recorded_at ? { error_message: VOICE_LOST_MESSAGE } : {};

/** A move that ends the call with `reason`, for the platform's own ends (do-not-call, carrier error, sweep). */
export const endMove = (reason: 'failed' | 'canceled' | 'queue_timeout' | 'concurrency_limit' | 'forwarded'): Move => ({ ...ENDED, reason });

/** The item after a move, computed in memory; what changed is written with one conditional update. */
function applied(item: CallItem, move: Move, d: MoveDetails): { next: CallItem; set: Record<string, unknown>; remove: string[] } {
  // The voice runtime's own end (voice-session.ts) names the reason of the carrier's plain `completed`.
  const voice = item as CallItem & VoiceFields;
  if (move.status === 'ended' && move.reason === 'completed' && voice.voice_end_reason) move = { ...move, reason: voice.voice_end_reason };
  const at = d.at;
  const set: Record<string, unknown> = { status: move.status, status_rank: move.rank, updated_at: clockNow().toISOString(), gsi1pk: statusPartition(item.organization_id, move.status) };
  const remove: string[] = [];
  if (d.providerCallId && !item.provider_call_id) set.provider_call_id = d.providerCallId;
  const ends = move.status === 'ended';
  const answeredAt = item.answered_at ?? (move.answered ? (ends ? new Date(Date.parse(at) - (d.durationSec ?? 0) * 1000).toISOString() : at) : null);
  if (answeredAt && !item.answered_at) set.answered_at = answeredAt;
  if (ends) {
    const answered = !!answeredAt && move.reason !== 'voicemail';
    const duration = answered ? Math.max(0, Math.round(d.durationSec ?? (Date.parse(at) - Date.parse(answeredAt!)) / 1000)) : 0;
    Object.assign(set, {
      ended_at: at,
      disconnection_reason: move.reason,
      duration_sec: duration,
      // A real call's conversation was left on the item by the voice runtime before the carrier's end.
      transcript: answered ? (d.transcript ?? item.transcript ?? []) : [],
      tool_calls: answered ? (d.toolCalls ?? item.tool_calls ?? []) : [],
      ...(answered && d.recordingKey ? { recording_key: d.recordingKey } : {}),
      ...(d.errorMessage ? { error_message: d.errorMessage } : voiceError(voice)),
      ...(d.durationFromStream ? { duration_source: 'stream' } : {}),
      ...(answered && d.segments ? { segments: d.segments } : {}),
    });
    // The due entry stays, due a grace period after the end, until the after-end steps are done
    // (finalize removes it): if they fail where no queue retries them (the sweep, the place job's
    // do-not-call cancel), the recovery sweep finishes them.
    Object.assign(set, dueEntry(item.organization_id, item.id, new Date(Math.max(Date.parse(at), clockMs()) + FINALIZE_GRACE_MS).toISOString()));
  } else if (move.answered && answeredAt) {
    // Answered: the sweep may end it once the agent's maximum duration (and a margin) has passed.
    Object.assign(set, dueEntry(item.organization_id, item.id, new Date(Date.parse(answeredAt) + item.max_call_duration_ms + RECOVERY_MARGIN_MS).toISOString()));
  }
  const next = { ...item, ...set } as CallItem;
  for (const field of remove) delete (next as unknown as Record<string, unknown>)[field];
  return { next, set, remove };
}

/**
 * Moves a call forward and writes, in one transaction: the call (conditioned on its current rank
 * being lower), the events the move emits (`call.started` when it is answered, `call.ended` when
 * it ends), and for an answered call's end its minutes charge (id derived from the call). A move
 * the call is already past changes nothing (`moved: false`). After an end, the after-end steps run
 * (contact history, analysis queued), also when a redelivered event finds them not done yet.
 */
export async function moveCall(start: CallItem, move: Move, d: MoveDetails): Promise<MoveResult> {
  let item = start;
  // Set when the end found the call's slot already freed (a slot recovered while its call still
  // lived should not happen: recoverSlot frees only ended or missing calls' slots): end it without.
  let slotGone = false;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    if (!advances(item.status_rank, move)) {
      if (item.status === 'ended') await finalize(item);
      return { moved: false, item };
    }
    const { next, set, remove } = applied(item, move, d);
    // The move that records the answer emits `call.started`, so it must be the only one: an end
    // read before the answer was written would otherwise pass the rank check and emit a second.
    const firstAnswer = set.answered_at !== undefined;
    // An end copies the conversation the voice runtime (or the relay) left on the item: it must be the one read, not overwritten by a stale read.
    const recorded = (item as CallItem & VoiceFields).voice_recorded_at;
    const sameRecord = next.status === 'ended' ? (recorded ? ' AND #rec = :rec' : ' AND attribute_not_exists(#rec)') : '';
    const writes: TransactItem[] = [
      updateExisting(keys.call(item.organization_id, item.id), set, {
        remove,
        condition: (firstAnswer ? '#rank < :rank AND (attribute_not_exists(#answered) OR attribute_type(#answered, :null))' : '#rank < :rank') + sameRecord,
        names: { '#rank': 'status_rank', ...(firstAnswer ? { '#answered': 'answered_at' } : {}), ...(sameRecord ? { '#rec': 'voice_recorded_at' } : {}) },
        values: { ':rank': move.rank, ...(firstAnswer ? { ':null': 'NULL' } : {}), ...(recorded && sameRecord ? { ':rec': recorded } : {}) },
      }),
    ];
    const counters: CounterDelta[] = [];
    const events: PlatformEvent[] = [];
    const publish = async (type: 'call.started' | 'call.ended') => {
      const built = newEvent(item.organization_id, type, { ...(await view(next)) });
      events.push(built.event);
      writes.push(built.write);
    };
    const answeredNow = !!next.answered_at && !item.answered_at && next.disconnection_reason !== 'voicemail';
    if (answeredNow) await publish('call.started');
    if (next.status === 'ended') {
      await publish('call.ended');
      const minutes = billableMinutes(next.duration_sec);
      if (minutes > 0 && next.price_per_minute > 0) {
        const charge = minutesCharge(next, minutes);
        writes.push(charge.item);
        counters.push(charge.counter);
      }
    }
    // The end frees the call's concurrency slot in the same transaction: the move is conditioned on
    // the call not being ended, so whatever ends it frees the slot exactly once (concurrency/slots.ts).
    const releaseAt = next.status === 'ended' && item.slot_kind && !slotGone ? writes.length : -1;
    if (releaseAt >= 0) writes.push(...releaseSlotWrites(item.organization_id, item.id, item.slot_kind!));
    // A call that ends while it waits for a slot (queued-calls.ts) leaves the queue with its end; if it
    // was placed meanwhile, the entry's delete fails and the call is read again (it holds a slot now).
    if (next.status === 'ended' && isWaiting(item)) writes.push(...leaveQueueWrites(item.organization_id, item.id));
    try {
      await transact(writes, counters);
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (releaseAt >= 0 && failedWrite(err) === releaseAt) {
        logger.warn('A call\'s concurrency slot was already freed when it ended', { call_id: item.id });
        slotGone = true;
        continue;
      }
      // Another event moved the call meanwhile: decide again on what it is now.
      const now = await getItem<CallItem>(keys.call(item.organization_id, item.id));
      if (!now) throw new NotFoundError('Call', item.id);
      item = now;
      await pause(attempt);
      continue;
    }
    await dispatchEvents(events);
    // A freed slot goes to the organization's oldest waiting call; if this fails, the recovery sweep places it.
    if (releaseAt >= 0) await promoteWaiting(item.organization_id, expireWaiting).catch((err) => logger.warn('Waiting calls were not placed after a slot freed; the recovery sweep will', { organization_id: item.organization_id, error: err as Error }));
    if (next.status === 'ended') await finalize(next);
    return { moved: true, item: next };
  }
  throw new Error(`Call ${start.id} kept changing while moving it to ${move.status}`);
}

/** The minutes charge of an ended call (id derived from the call: one charge per call, ever). */
function minutesCharge(item: CallItem, minutes: number) {
  return chargeWrite(item.organization_id, {
    id: callChargeId(item.id, item.created_at),
    amount: minutes * item.price_per_minute,
    reason: 'call_minutes',
    description: `${item.direction === 'inbound' ? `Inbound call from ${item.from_phone_number}` : `Outbound call to ${item.to_phone_number}`}: ${minutes} min at ${item.price_per_minute} USD/min`,
    resourceType: 'call',
    resourceId: item.id,
    // The organization's own number: the caller's side of an inbound call is someone else's.
    phoneNumber: item.direction === 'inbound' ? item.to_phone_number : item.from_phone_number,
    at: item.ended_at!,
  });
}

/**
 * The voice runtime's end of an inbound call's stream (the caller or the agent hung up, or the
 * agent transferred the caller), for a call the carrier has not ended yet: the call ends
 * `completed` (or the runtime's reason, `transferred`…), its duration from `answered_at` to the
 * stream's end, charged for that, `call.ended` once, analysis queued (moveCall). Outbound calls
 * are left to the carrier's status callback, which always comes for a call we place.
 */
export async function endAtStreamStop(item: CallItem, streamEndedAt: string): Promise<MoveResult> {
  if (item.direction !== 'inbound' || item.status === 'ended') return { moved: false, item };
  return moveCall(item, { status: 'ended', rank: STATUS_RANK.ended, reason: 'completed', answered: true }, { at: streamEndedAt, durationFromStream: true });
}

/**
 * The carrier's final duration for a call ended at its stream's stop (`duration_source` `stream`,
 * endAtStreamStop): `duration_sec` becomes the carrier's and `duration_source` `carrier`, and the
 * minutes charge is rewritten to match (created, changed or removed) in the same transaction,
 * conditioned on the stream's figure still standing, so a redelivered callback changes nothing
 * and nothing is charged twice. No second `call.ended`. Ends of other kinds (the carrier's own,
 * the recovery sweep's) are final.
 */
export async function correctDuration(item: CallItem, carrierSec: number): Promise<boolean> {
  const duration = Math.max(0, Math.round(carrierSec));
  if (item.status !== 'ended' || (item as CallItem & { duration_source?: string }).duration_source !== 'stream' || !item.answered_at || item.disconnection_reason === 'voicemail') return false;
  const before = item.price_per_minute > 0 ? billableMinutes(item.duration_sec) : 0;
  const after = item.price_per_minute > 0 ? billableMinutes(duration) : 0;
  const now = clockNow().toISOString();
  const writes: TransactItem[] = [
    updateExisting(keys.call(item.organization_id, item.id), { duration_sec: duration, duration_source: 'carrier', updated_at: now }, {
      condition: '#st = :ended AND #src = :stream AND #dur = :old',
      names: { '#st': 'status', '#src': 'duration_source', '#dur': 'duration_sec' },
      values: { ':ended': 'ended', ':stream': 'stream', ':old': item.duration_sec },
    }),
  ];
  const counters: CounterDelta[] = [];
  const corrected = { ...item, duration_sec: duration };
  const chargeKey = keys.charge(item.organization_id, callChargeId(item.id, item.created_at));
  if (before === 0 && after > 0) {
    const charge = minutesCharge(corrected, after);
    writes.push(charge.item);
    counters.push(charge.counter);
  } else if (before > 0 && after === 0) {
    writes.push(deleteExisting(chargeKey));
    counters.push({ orgId: item.organization_id, collection: collections.charges, delta: -1 });
  } else if (before !== after) {
    const { charge } = minutesCharge(corrected, after);
    writes.push(updateExisting(chargeKey, { amount: charge.amount, amount_units: charge.amount_units, amount_scale: charge.amount_scale, description: charge.description }));
  }
  try {
    await transact(writes, counters);
  } catch (err) {
    if (err instanceof ConditionFailed) return false; // corrected meanwhile (a redelivery), or changed since read
    throw err;
  }
  logger.info('A call\'s duration was corrected to the carrier\'s', { call_id: item.id, from_sec: item.duration_sec, to_sec: duration });
  // The analytics counters follow the corrected minutes and cost (only the difference is written).
  await syncConversationStats('call', item.organization_id, item.id);
  return true;
}

/**
 * The steps after an end, each idempotent, then `finalized_at` so a later event skips them: the
 * call in the contact's history (recordContactCall is idempotent per call), a campaign call's
 * outcome to its campaign contact (recordCampaignCallOutcome is idempotent per attempt), and the
 * analysis job.
 */
export async function finalize(item: CallItem): Promise<void> {
  if (item.finalized_at) return;
  if (item.contact_id) {
    await recordContactCall(item.organization_id, item.contact_id, {
      id: item.id,
      agent_id: item.agent_id,
      campaign_id: item.campaign_id,
      direction: item.direction,
      status: item.disconnection_reason ?? 'failed',
      answered: !!item.answered_at,
      from_phone_number: item.from_phone_number,
      to_phone_number: item.to_phone_number,
      started_at: item.started_at ?? item.created_at,
      ended_at: item.ended_at,
      duration_sec: item.duration_sec,
    }).catch((err) => {
      // A contact deleted since the call was placed has no history to write to.
      if (!(err instanceof NotFoundError)) throw err;
    });
  }
  await campaignCallEnded(item);
  await queue().send('call-analysis', { organization_id: item.organization_id, call_id: item.id });
  await transact([
    updateExisting(keys.call(item.organization_id, item.id), { finalized_at: clockNow().toISOString() }, {
      remove: ['due_at', 'gsi2pk', 'gsi2sk'],
      condition: 'attribute_not_exists(finalized_at)',
    }),
  ]).catch(ignoreConditionFailed);
}

export const callOf = (orgId: string, callId: string) => getItem<CallItem>(keys.call(orgId, callId));

/** The public URL of a Twilio callback endpoint for one call (PUBLIC_BASE_URL + path + the call in the query). */
export function twilioCallbackUrl(kind: 'status' | 'twiml' | 'recording', orgId: string, callId: string): string {
  const base = config().publicBaseUrl;
  if (!base) throw new Error('PUBLIC_BASE_URL must be set for the carrier to reach the platform (Twilio callbacks).');
  return withTraceQuery(`${base.replace(/\/$/, '')}/api/v1/telephony/twilio/${kind}?${new URLSearchParams({ organization_id: orgId, call_id: callId })}`);
}

/** dialBlock's answer (dnc/service.ts) for a call, its contact and do-not-call entry read in one BatchGetItem. */
async function dialBlockOf(orgId: string, item: CallItem): Promise<DialBlock | null> {
  if (!item.contact_id) return dialBlock(orgId, item.to_phone_number, null);
  const [contact, dnc] = [keys.contact(orgId, item.contact_id), keys.dnc(orgId, item.to_phone_number)];
  const read = await getKeyed([contact, dnc]);
  return blockOf(read<{ opt_out?: boolean }>(contact), read(dnc) !== undefined);
}

/** A waiting call at or past its deadline ends `queue_timeout` (the recovery sweep; a promotion that finds it first). */
export function expireWaiting(call: CallItem): Promise<MoveResult> {
  return moveCall(call, endMove('queue_timeout'), { at: call.waiting_until!, errorMessage: `No concurrency slot was free by ${call.waiting_until}; ended by the queue timeout` });
}

/** What call-place is given besides the call (from the job's entry, so this module does not import what imports it). */
export interface PlaceOptions {
  /** Connects an incoming call that waited on hold and now holds a slot (inbound-overflow.ts connectWaitingCaller). */
  connectCaller?: (item: CallItem) => Promise<void>;
}

/**
 * The call-place job: dials a queued call once. Checks the do-not-call list and the contact's
 * opt-out again right before dialing (a number listed since the call was queued is never dialed:
 * the call ends `canceled` with `error_message`), claims the dial with a conditional write (a
 * redelivered message never dials twice: at most once, never a second call to a person), then
 * asks the carrier. A carrier refusal ends the call `failed` with the carrier's message. The
 * simulated carrier's whole course goes to the call-events queue with message delays, so its
 * events take the same path as a real carrier's callbacks.
 */
export async function placeQueuedCall(orgId: string, callId: string, options: PlaceOptions = {}): Promise<void> {
  const item = await callOf(orgId, callId);
  if (item && courseUnqueued(item)) return queueCourseAgain(item);
  // A call waiting for a concurrency slot is placed only once it has one (queued-calls.ts).
  if (!item || item.status !== 'queued' || item.dial_claimed_at || isWaiting(item)) return;
  // An incoming call that waited on hold (its number's overflow) is not dialed: the caller is connected.
  if (item.direction === 'inbound') {
    if (options.connectCaller) return options.connectCaller(item);
    logger.error('An incoming call that waited for a slot reached call-place without a way to connect it', { call_id: callId });
    return;
  }
  const blocked = await dialBlockOf(orgId, item);
  const now = clockNow().toISOString();
  if (blocked) {
    await moveCall(item, endMove('canceled'), { at: now, errorMessage: DNC_MESSAGES[blocked] });
    return;
  }
  const carrier = telephony();
  try {
    await transact([
      updateExisting(keys.call(orgId, callId), { dial_claimed_at: now, started_at: now, provider: carrier.name, updated_at: now }, {
        condition: '#st = :queued AND attribute_not_exists(dial_claimed_at) AND attribute_not_exists(waiting_until)',
        names: { '#st': 'status' },
        values: { ':queued': 'queued' },
      }),
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) return; // another delivery claimed it, or the call ended meanwhile
    throw err;
  }
  const claimed: CallItem = { ...item, dial_claimed_at: now, started_at: now, provider: carrier.name };
  const twilio = carrier.name === 'twilio';
  let placed;
  try {
    placed = await carrier.placeCall({
      from: item.from_phone_number,
      to: item.to_phone_number,
      timeoutSeconds: Math.max(1, Math.round(item.ring_duration_ms / 1000)),
      // Only for agents with voicemail detection: detection delays the instructions by seconds.
      detectMachine: !!item.voicemail_detection,
      machineDetectionTimeoutMs: item.voicemail_detection?.timeout_ms,
      ...(twilio
        ? {
            answerUrl: twilioCallbackUrl('twiml', orgId, callId),
            statusCallbackUrl: twilioCallbackUrl('status', orgId, callId),
            recordingCallbackUrl: twilioCallbackUrl('recording', orgId, callId),
          }
        : {}),
    });
  } catch (err) {
    logger.warn('The carrier did not place the call', { call_id: callId, error: err as Error });
    await moveCall(claimed, endMove('failed'), { at: clockNow().toISOString(), errorMessage: `The carrier did not place the call: ${(err as Error).message}` });
    return;
  }
  await transact([
    updateExisting(keys.call(orgId, callId), { provider_call_id: placed.providerCallId }, { condition: 'attribute_not_exists(provider_call_id) OR provider_call_id = :p', values: { ':p': placed.providerCallId } }),
  ]).catch(ignoreConditionFailed);
  await queueCourse({ ...claimed, provider_call_id: placed.providerCallId }, placed.events);
}

/**
 * Queues a placed call's events for the call-events queue (the simulated carrier's course), then
 * notes that it did. A send that fails fails the job: its redelivery finds the dial claimed and the
 * note absent, and queues the course again from the carrier (`courseOf`): an event queued twice
 * moves nothing twice (every move is conditioned on the call's state).
 */
async function queueCourse(item: CallItem, events: CallStatusEvent[]): Promise<void> {
  if (!events.length) return;
  const startMs = clockMs();
  for (const event of events) {
    // Rounded up: like a real carrier's callback, an event is never applied before it happened.
    const delaySeconds = Math.min(900, Math.max(0, Math.ceil((Date.parse(event.at) - startMs) / 1000)));
    await queue().send('call-events', { kind: 'status', organization_id: item.organization_id, call_id: item.id, provider: item.provider!, event }, { delaySeconds });
  }
  await transact([updateExisting(keys.call(item.organization_id, item.id), { course_queued_at: clockNow().toISOString() })]).catch(ignoreConditionFailed);
}

/** A dialed call of a carrier whose events the platform queues itself, whose course was never all queued. */
function courseUnqueued(item: CallItem): boolean {
  return !!item.dial_claimed_at && !!item.provider_call_id && !item.course_queued_at && item.status !== 'ended' && item.provider === telephony().name && !!telephony().courseOf;
}

async function queueCourseAgain(item: CallItem): Promise<void> {
  const course = telephony().courseOf!(item.provider_call_id!, item.to_phone_number, Math.max(1, Math.round(item.ring_duration_ms / 1000)), Date.parse(item.dial_claimed_at!));
  await queueCourse(item, course);
}

/**
 * A message of the call-events queue: a carrier status event for a call (its URL names it), a
 * status event for an incoming call known only by the carrier's call id (a number's
 * StatusCallback), or (Twilio) a finished recording.
 */
export type CallEventMessage =
  | { kind: 'status'; organization_id: string; call_id: string; provider: string; event: CallStatusEvent }
  | { kind: 'inbound-status'; provider: string; event: CallStatusEvent }
  | { kind: 'recording'; organization_id: string; call_id: string; provider_call_id: string; recording_url: string };


import { telephony } from '../../adapters/telephony';
import { liveCallGone } from '../../adapters/telephony/port';
import { clockNow } from '../../clock';
import { config } from '../../config';
import { keys } from '../../db/keys';
import { getItem, putNew, transact, type CounterDelta, type TransactItem } from '../../db/store';
import { logger } from '../../logger';
import { withTraceQuery } from '../../telemetry/tracing';
import type { RawBody } from '../common/raw-body';
import { DEFAULT_HOLD_MUSIC_URL, overflowOf } from '../phone-numbers/overflow';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { endMove, expireWaiting, moveCall, twilioCallbackUrl } from './lifecycle';
import { createOrWait, isWaiting, type CallItem } from './service';
import { STATUS_RANK } from './state';
import { twiml, xml } from './voice-stream';

/**
 * Incoming calls at the organization's concurrency limit (docs/api.md, "Inbound overflow"). The
 * number's `overflow` decides (phone-numbers/overflow.ts), and every outcome is a call:
 *
 * - `reject`: the call is written without a slot and ended at once `concurrency_limit`; the
 *   carrier is told `<Reject/>` (busy, nothing billed);
 * - `forward`: written and ended at once `forwarded`; the carrier `<Dial>`s `overflow_phone_number`
 *   (the caller's number shown, as Twilio does for a forwarded incoming call) and bridges it: no
 *   agent, no slot;
 * - `queue`: written waiting in the organization's queue (the same FIFO, deadline and events as a
 *   `"queue": true` outbound call, service.ts createOrWait), `<Enqueue>`d at the carrier with our
 *   hold endpoint as its `waitUrl`. When a slot frees, the promotion (queued-calls.ts) sends the
 *   call to call-place, which connects it (connectWaitingCaller): the call moves `in_progress`
 *   and the carrier is told to fetch its instructions (the agent's stream or relay session), which
 *   takes the caller out of the carrier's queue. At its deadline the recovery sweep ends it
 *   `queue_timeout` and hangs up with an apology (hangUpTimedOut). Each hold-music round also asks
 *   the hold endpoint (holdInstructions), which answers from the call as stored: more music, the
 *   instructions once connected (should the live update have failed), or leave the queue once
 *   ended (the apology after `<Enqueue>` plays). A caller who hangs up while waiting ends the
 *   call `canceled` (carrier-events.ts).
 */

/** What an overflowing incoming call is answered with. */
export type OverflowAnswer =
  | { answer: 'reject'; reason: 'concurrency_limit'; organization_id: string; call: CallItem }
  | { answer: 'forward'; to: string; call: CallItem }
  | { answer: 'queue'; call: CallItem };

/** What the caller hears when no agent frees up in time (after the queue, and when a queued call ends otherwise). */
export const BUSY_MESSAGE = 'All of our agents are busy. Please call again later.';

/**
 * Answers an incoming call refused a slot, as its number says. `item` is the call as it would have
 * been made (with its slot kind), `rest` the other writes of its creating transaction (the carrier
 * call's one-session marker first). Undefined when a queued call found a slot after all (its
 * transaction took one): the caller answers it as any call.
 */
export async function answerOverflow(number: PhoneNumberItem, item: CallItem, rest: TransactItem[], counters: CounterDelta[]): Promise<OverflowAnswer | { slotTaken: CallItem }> {
  const settings = overflowOf(number);
  const orgId = item.organization_id;
  const { slot_kind: _kind, ...slotless } = item;
  if (settings.overflow === 'queue') {
    const queued: CallItem = { ...item, status: 'queued', status_rank: STATUS_RANK.queued };
    const waiting = await createOrWait(orgId, queued, [putNew({ ...queued }), ...rest], counters, settings.overflow_queue_seconds);
    if (!waiting) return { slotTaken: queued };
    logger.info('An incoming call waits for a concurrency slot', { organization_id: orgId, call_id: item.id, wait_seconds: settings.overflow_queue_seconds });
    return { answer: 'queue', call: waiting };
  }
  const forward = settings.overflow === 'forward' ? settings.overflow_phone_number : null;
  const record: CallItem = { ...(slotless as CallItem), ...(forward ? { overflow_forwarded_to: forward } : {}) };
  await transact([putNew({ ...record }), ...rest], counters);
  const ended = await moveCall(record, endMove(forward ? 'forwarded' : 'concurrency_limit'), {
    at: clockNow().toISOString(),
    errorMessage: forward
      ? `The organization was at its concurrency limit: forwarded to the number's overflow_phone_number`
      : 'The organization was at its concurrency limit: rejected (the number\'s overflow is reject)',
  });
  logger.info('An incoming call overflowed', { organization_id: orgId, call_id: item.id, overflow: settings.overflow });
  return forward ? { answer: 'forward', to: forward, call: ended.item } : { answer: 'reject', reason: 'concurrency_limit', organization_id: orgId, call: ended.item };
}

/**
 * The answer given again for an overflowing call the carrier asks about twice (a retried webhook):
 * from the call as stored. A record written without a slot whose end was interrupted (the move
 * after its put failed) is ended now, as it was meant to be: never answered as a stream without a slot.
 */
export async function overflowAnswerOf(call: CallItem): Promise<OverflowAnswer | undefined> {
  if (isWaiting(call)) return { answer: 'queue', call };
  if (call.direction === 'inbound' && !call.slot_kind && call.status !== 'ended') {
    const reason = call.overflow_forwarded_to ? 'forwarded' : 'concurrency_limit';
    const ended = await moveCall(call, endMove(reason), { at: clockNow().toISOString(), errorMessage: 'The organization was at its concurrency limit' });
    return overflowAnswerOf(ended.item);
  }
  if (call.disconnection_reason === 'forwarded' && call.overflow_forwarded_to) return { answer: 'forward', to: call.overflow_forwarded_to, call };
  if (call.disconnection_reason === 'concurrency_limit') return { answer: 'reject', reason: 'concurrency_limit', organization_id: call.organization_id, call };
  return undefined;
}

/** The hold endpoint of a waiting call (Twilio's `waitUrl`): the call in its query, and the trace. */
function holdUrl(orgId: string, callId: string): string {
  const base = config().publicBaseUrl;
  if (!base) throw new Error('PUBLIC_BASE_URL must be set for the carrier to reach the platform (Twilio callbacks).');
  return withTraceQuery(`${base.replace(/\/$/, '')}/api/v1/telephony/twilio/hold?${new URLSearchParams({ organization_id: orgId, call_id: callId })}`);
}

/** `<Dial>` to the overflow number: Twilio shows the caller's number to the party dialled (an incoming call's default caller id). */
export const forwardTwiml = (to: string): RawBody => twiml(`<Dial>${xml(to)}</Dial>`);

/**
 * `<Enqueue>` into the organization's carrier queue with our hold endpoint as its waitUrl; when the
 * caller leaves the queue without being connected (`<Leave/>`), the apology and a hang-up.
 */
export const enqueueTwiml = (call: CallItem): RawBody =>
  twiml(`<Enqueue waitUrl="${xml(holdUrl(call.organization_id, call.id))}" waitUrlMethod="POST">${xml(`overflow-${call.organization_id}`)}</Enqueue><Say>${BUSY_MESSAGE}</Say><Hangup/>`);

/**
 * The hold endpoint's answer (Twilio's waitUrl, asked when the caller enters the queue and after
 * each round of music): music while the call waits, its instructions once it holds a slot (a
 * `<Redirect>` to the call's TwiML endpoint: a backstop for a lost live update), `<Leave/>` once it
 * has ended (or passed its deadline: then ended here `queue_timeout`).
 */
export async function holdInstructions(orgId: string, callId: string): Promise<RawBody> {
  const call = await getItem<CallItem>(keys.call(orgId, callId));
  if (!call || call.status === 'ended') return twiml('<Leave/>');
  if (isWaiting(call)) {
    if (clockNow().toISOString() < call.waiting_until!) {
      const number = call.phone_number_id ? await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, call.phone_number_id)) : undefined;
      return twiml(`<Play>${xml(overflowOf(number ?? {}).overflow_hold_music_url ?? DEFAULT_HOLD_MUSIC_URL)}</Play>`);
    }
    await expireWaiting(call);
    return twiml('<Leave/>');
  }
  // Placed: a slot is the call's. Not connected yet (call-place's message lost or late): answered here first.
  if (call.status === 'queued') await moveCall(call, { status: 'in_progress', rank: STATUS_RANK.in_progress, answered: true }, { at: clockNow().toISOString() });
  return twiml(`<Redirect method="POST">${xml(twilioCallbackUrl('twiml', orgId, callId))}</Redirect>`);
}

/**
 * call-place for an incoming call that waited and now holds a slot: moved `in_progress` (the
 * answer: `call.started`, the sweep's due time from now), then the carrier is told to fetch the
 * call's instructions, which takes the caller out of the carrier's queue into the agent's session.
 * A caller who hung up meanwhile ends the call `canceled`; any other failure leaves the caller on
 * hold, where the next round of music asks the hold endpoint, which redirects them.
 */
export async function connectWaitingCaller(item: CallItem): Promise<void> {
  if (item.direction !== 'inbound' || item.status !== 'queued' || isWaiting(item) || !item.provider_call_id) return;
  const moved = await moveCall(item, { status: 'in_progress', rank: STATUS_RANK.in_progress, answered: true }, { at: clockNow().toISOString() });
  if (!moved.moved) return; // another delivery connected it, or the caller hung up meanwhile
  const carrier = telephony();
  if (!carrier.updateCall) {
    // The simulated carrier has no live call to redirect (its calls are events the platform queues itself): the call is connected in our records.
    if (carrier.name !== 'simulated') logger.error('The carrier cannot redirect a waiting caller', { call_id: item.id, carrier: carrier.name });
    return;
  }
  try {
    await carrier.updateCall(item.provider_call_id, { url: twilioCallbackUrl('twiml', item.organization_id, item.id) });
  } catch (err) {
    if (liveCallGone(err)) {
      await moveCall(moved.item, endMove('canceled'), { at: clockNow().toISOString(), errorMessage: 'The caller hung up while waiting for an agent' });
      return;
    }
    logger.warn('A waiting caller could not be connected at once; the hold music\'s next round will', { call_id: item.id, error: err as Error });
  }
}

/** The recovery sweep ended a waiting incoming call at its deadline: the caller hears the apology and is hung up (else at the music's next round). */
export async function hangUpTimedOut(call: CallItem): Promise<void> {
  const carrier = telephony();
  if (call.direction !== 'inbound' || !call.provider_call_id || !carrier.updateCall) return;
  await carrier.updateCall(call.provider_call_id, { twiml: twiml(`<Say>${BUSY_MESSAGE}</Say><Hangup/>`).body }).catch((err: unknown) => {
    if (!liveCallGone(err)) logger.warn('A timed-out waiting caller was not hung up; the hold music\'s next round will', { call_id: call.id, error: err as Error });
  });
}

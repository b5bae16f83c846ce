import { synthesizeRecording } from '../../adapters/recording/audio';
import { telephony } from '../../adapters/telephony';
import type { CallStatusEvent } from '../../adapters/telephony/port';
import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { getItem, ignoreConditionFailed, transact, updateExisting } from '../../db/store';
import { logger } from '../../logger';
import { inStoredTrace, linkToActive } from '../../telemetry/tracing';
import { simulatedConversation } from './conversation';
import { callOf, correctDuration, moveCall, type CallEventMessage, type MoveDetails, type MoveResult } from './lifecycle';
import { storeRecording } from './recordings';
import { isWaiting, statusPartition } from './service';
import { advances, isMachine, moveFor, type Move } from './state';

/**
 * Carrier events applied to calls (the call-events job): status events through the state machine
 * (lifecycle.ts), the simulated carrier's conversation produced at an answered call's end
 * (conversation.ts), and Twilio's finished recordings. Apart from lifecycle.ts so the state
 * machine does not depend on the simulated conversation (which runs warm transfers, which move
 * calls): no import circle.
 */

/**
 * Feeds one carrier status event to the state machine. An event for another carrier call than the
 * one placed is dropped. When the simulated carrier reports an answered call's end, its
 * conversation is produced here as a voice runtime would have: the transcript (the agent's begin
 * message with the call's variables, then scripted turns) and a real recording of the call's
 * length, stored before the end is written so `call.ended` carries both. Undefined for an unknown
 * call, and (without reading the call) for an event that moves no call or only rings it.
 */
export async function applyCarrierEvent(orgId: string, callId: string, event: CallStatusEvent, provider: string): Promise<MoveResult | undefined> {
  let move = moveFor(event);
  // An event that moves nothing (`queued`, a machine's `in-progress`) needs no read: only a `completed` may correct a duration.
  if (!move && event.status !== 'completed') return undefined;
  if (move?.status === 'ringing' && event.providerCallId) return void (await ring(orgId, callId, move, event));
  const item = await callOf(orgId, callId);
  if (!item) {
    logger.warn('Carrier event for an unknown call', { organization_id: orgId, call_id: callId });
    return undefined;
  }
  if (item.provider_call_id && event.providerCallId !== item.provider_call_id) {
    logger.warn('Carrier event for another carrier call; dropped', { call_id: callId, provider_call_id: event.providerCallId });
    return { moved: false, item };
  }
  if (!move) return { moved: false, item };
  // A caller on hold (their number's overflow queue) who hangs up before an agent is free: no conversation took place.
  if (isWaiting(item) && move.status === 'ended') move = { ...move, reason: 'canceled', answered: false };
  const details: MoveDetails = { at: event.at, durationSec: event.durationSec, providerCallId: event.providerCallId };
  if (provider === 'simulated' && move.status === 'ended' && move.answered && advances(item.status_rank, move)) {
    const seconds = Math.max(1, event.durationSec ?? 1);
    const conversation = await simulatedConversation(item, seconds);
    details.transcript = conversation.transcript;
    details.toolCalls = conversation.toolCalls;
    if (conversation.segments) details.segments = conversation.segments;
    // The agent handed the caller on (`transfer_call`): the call ends `transferred` for the agent.
    if (conversation.endedBy === 'transfer') move = { ...move, reason: 'transferred' };
    // SIMULATED_RECORDINGS=off (the week simulation) keeps the transcript but stores no audio.
    if (process.env.SIMULATED_RECORDINGS !== 'off') details.recordingKey = await storeRecording(orgId, callId, synthesizeRecording(seconds, { seed: callId }));
  }
  const result = await moveCall(item, move, details);
  // A final duration for a call ended at its stream's stop, also when that end won a race with
  // this event, corrects it.
  if (!result.moved && result.item.status === 'ended' && event.status === 'completed' && event.durationSec !== undefined && !isMachine(event.answeredBy)) {
    await correctDuration(result.item, event.durationSec);
  }
  return result;
}

/**
 * `ringing` moves the call and nothing else (no event, no end, no answer): the move's conditional
 * write alone, without reading the call first. The condition is the one moveCall would check (the
 * call exists, its rank is lower) and that the event is for the carrier call placed; when it fails
 * the event is stale or foreign and is dropped, as it would be after a read.
 */
async function ring(orgId: string, callId: string, move: Move, event: CallStatusEvent): Promise<void> {
  await transact([
    updateExisting(keys.call(orgId, callId), { status: move.status, status_rank: move.rank, updated_at: clockNow().toISOString(), gsi1pk: statusPartition(orgId, move.status), provider_call_id: event.providerCallId }, {
      condition: '#rank < :rank AND (attribute_not_exists(#pcid) OR #pcid = :pcid)',
      names: { '#rank': 'status_rank', '#pcid': 'provider_call_id' },
      values: { ':rank': move.rank, ':pcid': event.providerCallId },
    }),
  ]).catch(ignoreConditionFailed);
}

/** Copies a finished carrier recording into the bucket and links it to the call (Twilio's recording callback). */
export async function attachCarrierRecording(orgId: string, callId: string, providerCallId: string, recordingUrl: string): Promise<void> {
  const item = await callOf(orgId, callId);
  if (!item || (item.provider_call_id && item.provider_call_id !== providerCallId)) return;
  if (item.recording_key) return;
  const carrier = telephony();
  if (!carrier.fetchRecording) throw new Error(`The ${carrier.name} carrier cannot fetch recordings`);
  const audio = await carrier.fetchRecording(recordingUrl);
  const key = await storeRecording(orgId, callId, audio);
  await transact([updateExisting(keys.call(orgId, callId), { recording_key: key, updated_at: clockNow().toISOString() })]);
}

/** The call-events job's work for one message. */
export async function handleCallEventMessage(m: CallEventMessage): Promise<void> {
  if (m.kind === 'recording') return attachCarrierRecording(m.organization_id, m.call_id, m.provider_call_id, m.recording_url);
  if (m.kind === 'inbound-status') {
    const made = await getItem<{ organization_id: string; call_id: string; trace_parent?: string }>(keys.inboundCall(m.provider, m.event.providerCallId));
    // A call refused before any session (<Reject/>) has none: nothing to end.
    if (!made) return void logger.info('A status callback for an incoming call without a session; dropped', { provider_call_id: m.event.providerCallId });
    // The number's fixed StatusCallback carries no trace of the call's: its status (and what that starts: the end, the
    // analysis, the deliveries) joins the trace of the request that answered the call, linked to the callback's own.
    const apply = async () => void (await applyCarrierEvent(made.organization_id, made.call_id, m.event, m.provider));
    // (Tracing off, inStoredTrace runs it plainly.)
    if (!made.trace_parent) return apply();
    return inStoredTrace('call status', made.trace_parent, { attributes: { 'call.status': m.event.status }, links: linkToActive() }, apply);
  }
  await applyCarrierEvent(m.organization_id, m.call_id, m.event, m.provider);
}

import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { clockMs, clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import type { CallItem } from '../calls/service';
import { verify as verifyTwilioRequest } from '../calls/twilio-callbacks';
import { recordConversation, type VoiceFields } from '../calls/voice-session';
import { rawBody, type RawBody } from '../common/raw-body';
import { RELAY_CANNOT_CONTINUE, RELAY_MAX_RECONNECTS, RELAY_SESSION_CAP_MS, RELAY_TIME_UP, type Handoff } from './call-ending';
import { collectConversation } from './turns';
import { dialTwiml, hangupTwiml, isRelayAgent, relayCallAgent, relayTwiml } from './twiml';

/**
 * The `<Connect action>` of a relay call (Twilio requests it when the ConversationRelay session
 * ends, however it ended, signed like every Twilio webhook): what the call does next, from the
 * call's status (`CallStatus` `completed`: the caller hung up) and the `end` message's
 * `handoffData` (call-ending.ts; absent when the socket closed without `end`: `SessionStatus`
 * `failed`). It is where a relay call's end is decided, once: `$disconnect` decides nothing.
 */

function parseHandoff(data: string | undefined): Handoff | undefined {
  if (!data) return undefined;
  try {
    const value = JSON.parse(data) as Handoff;
    return value && typeof value.reasonCode === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** A final CallStatus (Twilio's Call resource): the call itself is over, whatever the session's status says. */
const callIsOver = (status: string | undefined): boolean => ['completed', 'busy', 'failed', 'no-answer', 'canceled'].includes(status ?? '');

/** The conversation's end on the call (written whole from its turns): its reason (a transfer), and an inbound call ends now (the carrier ends an outbound one). */
async function endOnCall(call: CallItem, endReason?: 'transferred'): Promise<void> {
  await recordConversation(call.organization_id, call.id, {
    ...(await collectConversation(call.id)),
    ...(endReason ? { endReason } : {}),
    streamEndedAt: clockNow().toISOString(),
  });
}

/**
 * POST the `<Connect action>` (Twilio, signed): the session is over; `HandoffData` says why. The
 * call is `transferred` only here, when the `<Dial>` goes back to Twilio.
 */
export async function relayAction(event: APIGatewayProxyEventV2, ref: { organization_id: string; call_id: string; attempt: number }, params: Record<string, string>): Promise<RawBody> {
  await verifyTwilioRequest(event, params);
  const call = await getItem<CallItem>(keys.call(ref.organization_id, ref.call_id));
  if (!call) {
    logger.error('A relay session ended for a call the platform does not know', { call_id: ref.call_id });
    return hangupTwiml(RELAY_CANNOT_CONTINUE);
  }
  if (callIsOver(params.CallStatus) && call.status === 'ended' && (call as CallItem & VoiceFields).voice_recorded_at) {
    // Ended and its conversation written already (its socket's close with no Twilio behind it, the terminal client's hang-up):
    // writing it again would only correct the ended call and queue its analysis a second time.
    return hangupTwiml();
  }
  const handoff = parseHandoff(params.HandoffData);
  if (handoff?.reasonCode === 'transfer' && handoff.to && handoff.mode === 'warm' && callIsOver(params.CallStatus)) {
    // The caller hung up as the session ended: nobody to transfer, nobody is dialed; the call ends as any other.
    logger.info('A warm transfer was asked as the caller hung up: nobody is dialed', { call_id: call.id });
    await endOnCall(call);
    return hangupTwiml();
  }
  if (handoff?.reasonCode === 'transfer' && handoff.to && handoff.mode === 'warm') {
    // Warm: the transfer is recorded and the person dialed while the conversation so far goes on the call (the call goes on);
    // the caller's conference TwiML is answered then, without waiting for the briefing (the person's ringing makes it: calls/warm-transfer.ts).
    const transfer = {
      organizationId: call.organization_id, callId: call.id, pipeline: 'relay' as const, call,
      destination: { phone_number: handoff.to, ...(handoff.description ? { description: handoff.description } : {}) },
      ...(handoff.reason ? { reason: handoff.reason } : {}),
    };
    // The transfer's code (dialing, the conference, the briefing) loads only for a warm transfer: most sessions end otherwise.
    const [started] = await Promise.all([
      import('../calls/warm-transfer').then(({ startWarmTransfer }) => startWarmTransfer(transfer)),
      collectConversation(call.id).then((conversation) => recordConversation(call.organization_id, call.id, conversation)),
    ]);
    if (started.ok) return rawBody('text/xml', started.callerTwiml);
    // Not dialed: the caller stays with the agent, in a new session that says so.
    logger.warn('A warm transfer could not start; the conversation resumes', { call_id: call.id, error: started.error });
    const url = process.env.RELAY_URL;
    const agent = await relayCallAgent(call);
    const now = await getItem<CallItem>(keys.call(ref.organization_id, ref.call_id));
    const index = (now?.transfers?.length ?? 0) - 1;
    const outcome = index >= 0 ? now!.transfers![index]!.outcome : null;
    if (agent && url && now && outcome && outcome !== 'connected') return relayTwiml(url, now, agent, 0, { resume: index });
    if (agent && url && now) return relayTwiml(url, now, agent, ref.attempt + 1);
    await endOnCall(call);
    return hangupTwiml(RELAY_CANNOT_CONTINUE);
  }
  if (callIsOver(params.CallStatus)) {
    // The caller hung up (Twilio requests the action at every session's end, this one included): the call ends now, once; nothing reconnects and this answer is not played.
    logger.info('A relay session ended with the call', { call_id: call.id, call_status: params.CallStatus, session_status: params.SessionStatus });
    await endOnCall(call);
    return hangupTwiml();
  }
  const agent = await relayCallAgent(call);
  if (handoff?.reasonCode === 'transfer' && handoff.to) {
    const timeout = Math.max(5, Math.min(600, Math.round((agent?.ring_duration_ms || 30_000) / 1000)));
    await endOnCall(call, 'transferred');
    return dialTwiml(handoff.to, timeout);
  }
  if (handoff?.reasonCode === 'end-call' || handoff?.reasonCode === 'max-duration') {
    await endOnCall(call);
    return hangupTwiml();
  }
  // The session ended on its own while the caller is still on the line (`end` to pass the session cap; or no `end`: API Gateway's idle
  // timeout or 2-hour limit, a restart, the network, a refused connection): the conversation resumes in a new session while it may
  // (its history read from the turns, no greeting: connect.ts), within RELAY_MAX_RECONNECTS and the call's time limit.
  const answeredMs = call.answered_at ? Date.parse(call.answered_at) : clockMs();
  const limit = agent?.max_call_duration_ms && agent.max_call_duration_ms > 0 ? agent.max_call_duration_ms : RELAY_SESSION_CAP_MS;
  const url = process.env.RELAY_URL;
  if (agent && isRelayAgent(agent) && url && call.status !== 'ended' && ref.attempt < RELAY_MAX_RECONNECTS && clockMs() - answeredMs < limit) {
    logger.info('A relay session ended on its own: the call reconnects', { call_id: call.id, attempt: ref.attempt + 1, session_status: params.SessionStatus });
    return relayTwiml(url, call, agent, ref.attempt + 1);
  }
  logger.warn('A relay session ended and the call cannot go on', { call_id: call.id, attempt: ref.attempt, session_status: params.SessionStatus });
  await endOnCall(call);
  return hangupTwiml(clockMs() - answeredMs >= limit ? RELAY_TIME_UP : RELAY_CANNOT_CONTINUE);
}

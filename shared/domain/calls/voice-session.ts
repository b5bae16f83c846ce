import { createHash } from 'node:crypto';
import { queue } from '../../adapters/queue';
import { clockMs, clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, putNew, transact, updateExisting } from '../../db/store';
import { endAtStreamStop } from './lifecycle';
import type { CallToolCalls, Transcript } from './schemas';
import type { CallItem } from './service';
import { VOICE_LOST_MESSAGE, type VoiceEndReason, type VoiceFields } from './state';
import { STREAM_TOKEN_TTL_SECONDS } from './voice-stream';

export { VOICE_LOST_MESSAGE };

/**
 * What the voice runtime writes to a call (voice/). The runtime leaves on the item what the call's
 * end must carry:
 *
 * - `voice_stream_at` when a stream is admitted (openVoiceSession: one stream per token, ever);
 * - the conversation (`transcript`, `tool_calls`) and `voice_recorded_at` when the stream stops or
 *   before the runtime hangs up, with the runtime's own end reason (`voice_end_reason`: the agent
 *   transferred the caller, reached a voicemail, the model failed) and `voice_error_message`.
 *
 * Who ends the call: the carrier's final status always may (moveCall). An **inbound** call is
 * also ended by the stream's end (`streamEndedAt` on the final record): Twilio sends a status
 * callback for an incoming call only when the number's `StatusCallback` is set, so the stream's
 * stop is the one end the platform is sure to see. It ends `completed` (or the runtime's reason,
 * `transferred`…), its duration from `answered_at` to the stream's end; a carrier callback that
 * comes afterwards corrects the duration and the charge to the carrier's figure
 * (lifecycle.ts, correctDuration), without a second `call.ended`. An **outbound** call is left to
 * the carrier, which always calls back (the platform sets `StatusCallback` when placing it) and
 * alone tells a person from a machine, busy or no answer: `call.ended` then carries its figure.
 *
 * Order: the stream's `stop` reaches the runtime at once, while the carrier's `completed` goes
 * through a callback and a queue, so the conversation is normally on the item first and the end
 * (lifecycle.ts, `applied`) copies it into the call and `call.ended`. When the end came first, the
 * item is corrected here and analysis is queued again (it runs once: it skips an analysed call).
 * A stream admitted but never recorded (the runtime crashed or was killed mid-call) ends with
 * VOICE_LOST_MESSAGE as its `error_message`; a call whose carrier never reports an end is ended
 * by the recovery sweep (recovery.ts) like any other.
 */
export type { VoiceEndReason, VoiceFields } from './state';

export interface RecordedConversation {
  transcript: Transcript;
  toolCalls: CallToolCalls;
  endReason?: VoiceEndReason;
  errorMessage?: string;
  /** Set on the final record, when the carrier's stream has stopped (or the runtime closed it): ends an inbound call. */
  streamEndedAt?: string;
}

/** Why a stream was not admitted, or that it was. */
export type StreamAdmission = 'admitted' | 'token_used' | 'call_ended';

/** How long a token's marker outlives the token (its expiry already refuses it afterwards). */
const TOKEN_MARKER_TTL_SECONDS = STREAM_TOKEN_TTL_SECONDS + 3600;

/**
 * Admits the call's media stream for `token` (already verified), once ever: a marker keyed by the
 * token's hash is put with attribute_not_exists in the same transaction that marks the call's
 * stream (`voice_stream_at`, the call not ended). A second stream with the same token is refused
 * whichever runtime task it reaches, now or later; so is a stream for a call that has ended.
 */
export async function openVoiceSession(orgId: string, callId: string, token: string): Promise<StreamAdmission> {
  const marker = keys.voiceStreamToken(createHash('sha256').update(token).digest('base64url'));
  const now = clockNow().toISOString();
  try {
    await transact([
      putNew({ ...marker, entity: 'VOICE_STREAM_TOKEN', organization_id: orgId, call_id: callId, created_at: now, ttl: Math.floor(clockMs() / 1000) + TOKEN_MARKER_TTL_SECONDS }),
      updateExisting(keys.call(orgId, callId), { voice_stream_at: now }, { condition: '#st <> :ended', names: { '#st': 'status' }, values: { ':ended': 'ended' } }),
    ]);
    return 'admitted';
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    return (await getItem(marker)) ? 'token_used' : 'call_ended';
  }
}

/**
 * Stores the conversation on the call so the end carries it into `call.ended`; on a call already
 * ended, corrects its transcript, tool calls and error and queues its analysis again. Called more
 * than once (before a hang-up, then at the stream's stop), the last write wins. With
 * `streamEndedAt`, an inbound call not ended yet is ended now (endAtStreamStop).
 */
export async function recordConversation(orgId: string, callId: string, rec: RecordedConversation): Promise<'before_end' | 'after_end' | 'unknown'> {
  const key = keys.call(orgId, callId);
  const now = clockNow().toISOString();
  try {
    await transact([
      updateExisting(
        key,
        {
          transcript: rec.transcript,
          tool_calls: rec.toolCalls,
          voice_recorded_at: now,
          updated_at: now,
          ...(rec.endReason ? { voice_end_reason: rec.endReason } : {}),
          ...(rec.errorMessage ? { voice_error_message: rec.errorMessage } : {}),
        },
        { condition: '#st <> :ended', names: { '#st': 'status' }, values: { ':ended': 'ended' } },
      ),
    ]);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    return correctEndedCall(orgId, callId, rec, now);
  }
  if (rec.streamEndedAt) {
    const item = await getItem<CallItem>(key);
    // The caller left the stream for a warm transfer's conference (calls/warm-transfer.ts): the call goes on without it, and the conference's end ends it.
    const inConference = (item?.transfers ?? []).some((t) => t.mode === 'warm' && (t.outcome === null || t.outcome === 'connected'));
    if (item && !inConference) await endAtStreamStop(item, rec.streamEndedAt);
  }
  return 'before_end';
}

/** The conversation recorded after the call's end: the call is corrected and analysed again. */
async function correctEndedCall(orgId: string, callId: string, rec: RecordedConversation, now: string): Promise<'after_end' | 'unknown'> {
  const key = keys.call(orgId, callId);
  const item = await getItem<CallItem & VoiceFields>(key);
  if (!item) return 'unknown';
  // The end's own rules: a voicemail (or unanswered) call keeps no conversation.
  const answered = !!item.answered_at && item.disconnection_reason !== 'voicemail';
  const error = rec.errorMessage ?? (item.error_message === VOICE_LOST_MESSAGE ? null : item.error_message ?? null);
  await transact([
    updateExisting(key, {
      transcript: answered ? rec.transcript : [],
      tool_calls: answered ? rec.toolCalls : [],
      error_message: error,
      voice_recorded_at: now,
      updated_at: now,
    }),
  ]);
  if (!item.analysis) await queue().send('call-analysis', { organization_id: orgId, call_id: callId });
  return 'after_end';
}

import { queue } from '../../adapters/queue';
import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, ignoreConditionFailed, transact, updateExisting } from '../../db/store';
import type { CallToolCalls, DisconnectionReason, Transcript } from './schemas';
import type { CallItem } from './service';

/**
 * What the voice runtime writes to a call (voice/). The carrier's end status stays the one thing
 * that ends a call (moveCall); the runtime only leaves on the item what that end must carry:
 *
 * - `voice_stream_at` when a stream is admitted;
 * - the conversation (`transcript`, `tool_calls`) and `voice_recorded_at` when the stream stops or
 *   before the runtime hangs up, with the runtime's own end reason (`voice_end_reason`: the agent
 *   transferred the caller, reached a voicemail, the model failed) and `voice_error_message`.
 *
 * Order: the stream's `stop` reaches the runtime at once, while the carrier's `completed` goes
 * through a callback and a queue, so the conversation is normally on the item first and the end
 * (lifecycle.ts, `applied`) copies it into the call and `call.ended`. When the end came first, the
 * item is corrected here and analysis is queued again (it runs once: it skips an analysed call).
 * A stream admitted but never recorded (the runtime crashed or was killed mid-call) ends with
 * VOICE_LOST_MESSAGE as its `error_message`; a call whose carrier never reports an end is ended
 * by the recovery sweep (recovery.ts) like any other.
 */
export const VOICE_LOST_MESSAGE = 'The voice runtime stopped during the call; the conversation was not recorded';

/** The reasons the runtime may give its own end (the carrier's `completed` is replaced by them). */
export type VoiceEndReason = Extract<DisconnectionReason, 'voicemail' | 'transferred' | 'failed'>;

export interface VoiceFields {
  voice_stream_at?: string;
  voice_recorded_at?: string;
  voice_end_reason?: VoiceEndReason;
  voice_error_message?: string;
}

export interface RecordedConversation {
  transcript: Transcript;
  toolCalls: CallToolCalls;
  endReason?: VoiceEndReason;
  errorMessage?: string;
}

/** Marks the call's stream as admitted (once). */
export async function openVoiceSession(orgId: string, callId: string): Promise<void> {
  await transact([updateExisting(keys.call(orgId, callId), { voice_stream_at: clockNow().toISOString() }, { condition: 'attribute_not_exists(voice_stream_at)' })]).catch(ignoreConditionFailed);
}

/**
 * Stores the conversation on the call so the carrier's end carries it into `call.ended`; on a call
 * already ended, corrects its transcript, tool calls and error and queues its analysis again.
 * Called more than once (before a hang-up, then at the stream's stop), the last write wins.
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
    return 'before_end';
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
  }
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

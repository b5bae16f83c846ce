import type { CallStatusEvent } from '../../adapters/telephony/port';
import type { CallStatus, DisconnectionReason } from './schemas';

/**
 * The call state machine, as pure rules. A call only moves forward:
 *
 *   queued (0) → ringing (1) → in_progress (2) → ended (3, final)
 *
 * Each status has a rank; a move is a conditional write `status_rank < :target` (service.ts), so
 * a duplicate event (same rank), a late one (lower rank) or any event after the end changes
 * nothing, whatever order the carrier delivers them in. A move may skip ranks (a `completed`
 * that arrives before `in-progress` ends the call at once).
 */
export const STATUS_RANK: Record<CallStatus, number> = { queued: 0, ringing: 1, in_progress: 2, ended: 3 };

export interface Move {
  status: CallStatus;
  rank: number;
  /** Set when the move ends the call. */
  reason?: DisconnectionReason;
  /** The move proves the call was answered (in progress, or completed by a person). */
  answered: boolean;
}

/** A call's error when its stream was admitted and never recorded (the voice runtime died mid-call). */
export const VOICE_LOST_MESSAGE = 'The voice runtime stopped during the call; the conversation was not recorded';

/** The reasons the voice runtime may give its own end (the carrier's `completed` is replaced by them). */
export type VoiceEndReason = Extract<DisconnectionReason, 'voicemail' | 'transferred' | 'failed'>;

/** What the voice runtime leaves on a call item (voice-session.ts writes them; lifecycle.ts reads them). */
export interface VoiceFields {
  voice_stream_at?: string;
  voice_recorded_at?: string;
  voice_end_reason?: VoiceEndReason;
  voice_error_message?: string;
}

/** Twilio's `AnsweredBy` values that mean a machine (answering machine detection). */
export const isMachine = (answeredBy: string | undefined) => !!answeredBy && answeredBy.startsWith('machine');

/**
 * Where a carrier status event takes a call; undefined for `queued` (a call starts queued, so
 * that event never moves it). `completed` answered by a machine is `voicemail`, and then the
 * call counts as not answered (no conversation took place, duration 0).
 */
export function moveFor(event: Pick<CallStatusEvent, 'status' | 'answeredBy'>): Move | undefined {
  const ended = (reason: DisconnectionReason, answered = false): Move => ({ status: 'ended', rank: STATUS_RANK.ended, reason, answered });
  switch (event.status) {
    case 'queued':
      return undefined;
    case 'ringing':
      return { status: 'ringing', rank: STATUS_RANK.ringing, answered: false };
    case 'in-progress':
      return isMachine(event.answeredBy) ? undefined : { status: 'in_progress', rank: STATUS_RANK.in_progress, answered: true };
    case 'completed':
      return isMachine(event.answeredBy) ? ended('voicemail') : ended('completed', true);
    case 'busy':
      return ended('busy');
    case 'no-answer':
      return ended('no_answer');
    case 'failed':
      return ended('failed');
    case 'canceled':
      return ended('canceled');
    default:
      return undefined;
  }
}

/** Whether a move applies to a call now at `currentRank`. */
export function advances(currentRank: number, move: Move | undefined): move is Move {
  return !!move && move.rank > currentRank;
}

/** Billable minutes of an answered call: every started minute counts (61 s is 2 minutes). */
export function billableMinutes(durationSec: number): number {
  return durationSec > 0 ? Math.ceil(durationSec / 60) : 0;
}

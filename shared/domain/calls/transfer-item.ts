import type { TransferMode, TransferOutcome } from './schemas';

/**
 * A transfer as the call item keeps it (`transfers`, in order; the index is the transfer's id in
 * callbacks and in the stream's `resume` parameter). The API shows the public fields
 * (transferView); the rest is what the platform's callbacks need.
 */
export interface TransferItem {
  phone_number: string;
  mode: TransferMode;
  started_at: string;
  /** Null while the person's phone rings or they hear the briefing. */
  outcome: TransferOutcome | null;
  briefing: string;
  /** The destination's description (what the model read), when it had one. */
  description?: string;
  /** The tool's `reason` argument. */
  reason?: string;
  /** The pipeline the caller returns to when the person does not take the call. */
  pipeline?: 'realtime' | 'relay';
  /** The person's call (the carrier's id). */
  leg_call_id?: string;
  /** When the outcome was known. */
  decided_at?: string;
  /** The person's call ended: its seconds connected, and whether its minutes were charged. */
  leg_duration_sec?: number;
  leg_charged_at?: string;
  /** The briefing is being made (the claim of the request making it: one model call, not one per callback). */
  briefing_started_at?: string;
  /** The person pressed 1; the transfer connects when they join the conference (`joined_at`). */
  accepted_at?: string;
  joined_at?: string;
  /** The conference's participants (carrier call id → when they joined and left), for its participant minutes. */
  participants?: Record<string, { joined_at: string; left_at?: string }>;
  conference_charged_at?: string;
  /** Machine detection's answer (`human`, `machine_start`, …) and its charge. */
  answered_by?: string;
  amd_charged_at?: string;
  /** The caller is to be sent back to the agent and has not been yet (the recovery sweep retries it); the last failed try. */
  return_pending?: boolean;
  return_tried_at?: string;
  /** The caller was sent back, or could not be (the call was over). */
  caller_returned_at?: string;
  return_abandoned_at?: string;
}

/** What the API shows of a transfer. */
export const transferView = (t: TransferItem) => ({
  phone_number: t.phone_number,
  mode: t.mode,
  started_at: t.started_at,
  outcome: t.outcome ?? null,
  briefing: t.briefing ?? '',
});

/** What the caller hears first when the conversation resumes after a transfer the person did not take (the ConversationRelay session's welcome greeting). */
const RESUME_WORDS: Record<string, string> = {
  declined: 'the person I called could not take your call just now',
  no_answer: 'the person I called did not answer',
  machine: 'I reached a voicemail rather than the person',
  failed: 'I could not reach the person I called',
};

export function resumeGreeting(outcome: string | null | undefined): string {
  const what = RESUME_WORDS[outcome ?? ''] ?? RESUME_WORDS.failed;
  return `I'm sorry, ${what}. I can take a message or arrange a callback. Which would you prefer?`;
}

/** The transcript's `system` line of a transfer's briefing and of its outcome. */
export const briefingLine = (t: Pick<TransferItem, 'phone_number' | 'briefing'>) => `Warm transfer to ${t.phone_number}: briefing: ${t.briefing}`;
const OUTCOME_LINES: Record<string, string> = {
  connected: 'the person accepted; the caller is connected to them and the agent left the call',
  declined: 'the person declined the call; the caller is back with the agent',
  no_answer: 'nobody answered; the caller is back with the agent',
  machine: 'a voicemail answered; the caller is back with the agent',
  failed: 'the call to the person failed; the caller is back with the agent',
};
export const outcomeLine = (t: Pick<TransferItem, 'phone_number'>, outcome: string) => `Warm transfer to ${t.phone_number}: ${outcome}: ${OUTCOME_LINES[outcome] ?? outcome}`;

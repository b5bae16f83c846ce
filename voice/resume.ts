import { clockNow } from '../shared/clock';
import type { Transcript } from '../shared/domain/calls/schemas';
import type { CallItem } from '../shared/domain/calls/service';
import { resumeGreeting, type TransferItem } from '../shared/domain/calls/transfer-item';

/**
 * A stream that resumes a call's conversation: after a warm transfer the human did not take
 * (declined, no answer, a machine, a failed dial), the platform sends the caller back to the
 * runtime with the stream parameter `resume` (the transfer's index in the call's `transfers`).
 * The new Realtime session starts empty, so it is given the conversation so far as items
 * (`conversation.item.create` with `message` items: the caller's words as `user` `input_text`,
 * the agent's as `assistant` text, the platform's turns such as the briefing as `system`; the
 * Realtime reference lets a client populate history this way, assistant audio excepted, which is
 * why the agent's turns go as their text), and then asked to tell the caller what happened.
 */

/** Most turns carried into a resumed session (the latest kept): enough context, not a flood of events. */
export const MAX_HISTORY_TURNS = 200;

/** The transfer a resumed stream comes back from (`resume` = its index), when the call has it. */
export function transferOf(call: CallItem, resume: string | undefined): TransferItem | undefined {
  const transfers = call.transfers ?? [];
  const index = Number(resume);
  if (resume !== undefined && Number.isInteger(index) && index >= 0 && index < transfers.length) return transfers[index];
  return transfers[transfers.length - 1];
}

/**
 * The one-off instructions of the resumed session's first response: say what happened (the words
 * the relay pipeline greets with, transfer-item.ts), offer a message or a callback, go on.
 */
export function resumeInstructions(transfer: TransferItem | undefined): string {
  return (
    'You tried to transfer the caller to a person and it did not work out; the caller has been on hold and is back with you now. ' +
    `Tell them so briefly, in the language of the conversation, to this effect: "${resumeGreeting(transfer?.outcome)}" ` +
    'Then go on with the conversation: take their message or arrange the callback.'
  );
}

/** The `conversation.item.create` events that give a new Realtime session the conversation so far. */
export function historyItems(protocol: 'ga' | 'beta', transcript: Transcript): Record<string, unknown>[] {
  // GA assistant content is `output_text`; the beta protocol named it `text`.
  const assistantText = protocol === 'ga' ? 'output_text' : 'text';
  return transcript.slice(-MAX_HISTORY_TURNS).filter((t) => t.text.trim()).map((t) => {
    const role = t.role === 'agent' ? 'assistant' : t.role;
    const type = role === 'assistant' ? assistantText : 'input_text';
    return { type: 'conversation.item.create', item: { type: 'message', role, content: [{ type, text: t.text }] } };
  });
}

/**
 * When a resumed stream's transcript clock starts (ms, the runtime's clock), so its turns follow
 * the earlier ones: the call's time since it was answered (the platform's clock, which the
 * earlier streams' times also follow), and never before the last turn already written.
 */
export function resumedStartMs(call: CallItem, transcript: Transcript, nowMs = Date.now()): number {
  const last = transcript.reduce((max, t) => Math.max(max, t.time_sec), 0);
  const sinceAnswer = call.answered_at ? (clockNow().getTime() - Date.parse(call.answered_at)) / 1000 : 0;
  return nowMs - Math.max(last, Number.isFinite(sinceAnswer) ? sinceAnswer : 0) * 1000;
}

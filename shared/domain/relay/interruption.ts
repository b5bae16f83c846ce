import type { Transcript } from '../calls/schemas';
import type { ConversationMessage } from '../conversations/engine';

/**
 * What an interruption keeps of a reply: Twilio reports the words the caller heard before speaking
 * over the agent (`utteranceUntilInterrupt`); the reply's messages and its transcript line are cut
 * to them, marked interrupted. Pure: the turn-taking decides whose reply the words were.
 */

/** Letters and digits only, lower-cased: Twilio's `utteranceUntilInterrupt` is compared with what was sent this way. */
const plain = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

/** Whether `heard` is the start of `sent` (what one reply's tokens said so far). */
export const heardOf = (heard: string, sent: string) => plain(sent).startsWith(plain(heard));

/** The start of `text` that holds `n` letters and digits (whole trailing punctuation dropped). */
function prefixWith(text: string, n: number): string {
  if (n <= 0) return '';
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    if (/[\p{L}\p{N}]/u.test(text[i]!)) count++;
    if (count >= n) return text.slice(0, i + 1);
  }
  return text;
}

/**
 * Cuts one turn's reply to the words heard: in the model's history every reply of the turn (the
 * text before and after its tool calls) keeps what was heard of it, in order, and a reply nothing
 * was heard of is dropped; in the transcript the turn's agent line becomes the words heard, marked
 * interrupted (nothing heard: no agent line).
 */
export function cutReply(turn: { messages: ConversationMessage[]; lines: Transcript }, heard: string): { messages: ConversationMessage[]; lines: Transcript } {
  const text = heard.trim();
  let left = plain(text).length;
  const messages: ConversationMessage[] = [];
  for (const m of turn.messages) {
    if (m.role !== 'agent' || !m.content) {
      messages.push(m);
      continue;
    }
    const kept = prefixWith(m.content, left).trim();
    left -= plain(kept).length;
    if (kept) messages.push({ ...m, content: kept });
  }
  const lines = [...turn.lines];
  const at = lines.findLastIndex((l) => l.role === 'agent');
  if (at >= 0) {
    if (text) lines[at] = { ...lines[at]!, text, interrupted: true };
    else lines.splice(at, 1);
  }
  return { messages, lines };
}

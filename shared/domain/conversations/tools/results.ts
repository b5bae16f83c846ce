import { MAX_TOOL_RESULT_BYTES } from '../types';

/** The marker ending a tool result cut at MAX_TOOL_RESULT_BYTES. */
export const TRUNCATION_MARKER = `… [truncated at ${MAX_TOOL_RESULT_BYTES} bytes]`;

/** Text cut to at most `max` UTF-8 bytes with the marker, never splitting a character. */
export function truncatedText(text: string, max = MAX_TOOL_RESULT_BYTES): string {
  const room = max - Buffer.byteLength(TRUNCATION_MARKER, 'utf8');
  const cut = Buffer.from(text, 'utf8').subarray(0, room).toString('utf8').replace(/\uFFFD+$/, '');
  return `${cut}${TRUNCATION_MARKER}`;
}

/** A tool result as a conversation keeps it: at most MAX_TOOL_RESULT_BYTES of JSON; a longer one is kept as its truncated text. */
export function capResult(result: unknown): unknown {
  const text = typeof result === 'string' ? result : JSON.stringify(result ?? null);
  return Buffer.byteLength(text, 'utf8') <= MAX_TOOL_RESULT_BYTES ? result : truncatedText(text);
}

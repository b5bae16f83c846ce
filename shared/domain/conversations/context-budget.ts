import type { LlmMessage, LlmPassage, LlmTool } from '../../adapters/llm/port';

/**
 * What one model request may hold (docs/api.md, "Long conversations"): the prompt, the passages
 * and the tools always; then as much of the most recent history as fits `LLM_CONTEXT_TOKENS`.
 * History is dropped by whole turns, oldest first: a turn is a user message and everything after
 * it up to the next user message (the messages before the first user message, such as the begin
 * message, are one more turn), so a tool call is never separated from its result. The current
 * turn (from the last user message on) is always sent.
 *
 * Tokens are estimated, not counted (no tokenizer is loaded in a chat function): a character is
 * taken as a third of a token (English text averages about four characters a token, so this errs
 * on the side of sending less), plus a few tokens per message and per tool for the framing.
 */

/** `LLM_CONTEXT_TOKENS` when unset. */
export const DEFAULT_CONTEXT_TOKENS = 32_000;
/** Tokens kept free for the model's answer. */
export const ANSWER_RESERVE_TOKENS = 1_000;
/** Characters counted as one token. */
export const CHARS_PER_TOKEN = 3;
/** The framing of one message (role, separators) and of one tool. */
const MESSAGE_OVERHEAD = 6;

/**
 * LLM_CONTEXT_TOKENS, read at each use (tests change it): a whole number of at least 2,000, else
 * the start fails loudly rather than every turn sending too much or nothing.
 */
export function contextTokenLimit(): number {
  const raw = process.env.LLM_CONTEXT_TOKENS;
  if (raw === undefined || raw.trim() === '') return DEFAULT_CONTEXT_TOKENS;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 2_000) throw new Error(`Setting LLM_CONTEXT_TOKENS must be a whole number of at least 2000, got "${raw}".`);
  return n;
}

/** The estimated tokens of a text. */
export const estimateTokens = (text: string): number => Math.ceil(text.length / CHARS_PER_TOKEN);

/** The estimated tokens of one message of the conversation. */
export function messageTokens(m: LlmMessage): number {
  let chars = m.content.length;
  if (m.role === 'assistant') for (const c of m.toolCalls ?? []) chars += c.id.length + c.name.length + c.arguments.length + 20;
  if (m.role === 'tool') chars += m.toolCallId.length + m.name.length + 60; // the data framing the adapter adds
  return Math.ceil(chars / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD;
}

/** The estimated tokens of what every request holds whatever the history: the prompt, the passages and the tools. */
export function fixedTokens(request: { system: string; passages: LlmPassage[]; tools: LlmTool[] }): number {
  const passages = request.passages.reduce((n, p) => n + p.text.length + p.doc_id.length + (p.url?.length ?? 0) + 40, request.passages.length ? 250 : 0);
  const tools = request.tools.reduce((n, t) => n + t.name.length + t.description.length + JSON.stringify(t.parameters).length + 30, 0);
  return estimateTokens(request.system) + Math.ceil((passages + tools) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD * (2 + request.tools.length);
}

/** The conversation cut into turns (see the module comment), oldest first. */
export function turnsOf(messages: LlmMessage[]): LlmMessage[][] {
  const turns: LlmMessage[][] = [];
  for (const m of messages) {
    if (m.role === 'user' || !turns.length) turns.push([m]);
    else turns[turns.length - 1]!.push(m);
  }
  return turns;
}

/**
 * The most recent whole turns of `messages` that fit in `limit` tokens beside the request's fixed
 * part and the answer's reserve; the last turn always. `dropped` counts the turns left out.
 */
export function fitHistory(
  request: { system: string; passages: LlmPassage[]; tools: LlmTool[]; messages: LlmMessage[] },
  limit: number = DEFAULT_CONTEXT_TOKENS,
): { messages: LlmMessage[]; dropped: number } {
  const turns = turnsOf(request.messages);
  let room = limit - ANSWER_RESERVE_TOKENS - fixedTokens(request);
  let kept = 0;
  for (let i = turns.length - 1; i >= 0; i--) {
    const size = turns[i]!.reduce((n, m) => n + messageTokens(m), 0);
    if (kept > 0 && size > room) break;
    room -= size;
    kept++;
  }
  const from = turns.length - kept;
  return { messages: turns.slice(from).flat(), dropped: from };
}

import { randomUUID } from 'node:crypto';
import { normalizeTerm } from '../../domain/common/terms';
import { LlmError, type LlmMessage, type LlmPassage, type LlmPort, type LlmRequest, type LlmResponse, type LlmTool, type LlmToolCall } from './port';

/**
 * The local model: a few fixed rules, no language model and no account. It is the default so that
 * development, tests and `npm run simulate` need nothing outside; it never invents anything. The
 * rules, in the order they apply to one step (docs/api.md, "The model", says the same):
 *
 * 1. After tool results (the last message is a tool's), it answers in text: a short goodbye after
 *    `end_call`, otherwise "The <name> tool answered: <compact JSON or text>." (or "… failed: <error>.")
 *    for each result of the step. So it can never loop on tools.
 * 2. When the user's latest message says goodbye (`bye`, `goodbye`), it calls `end_call` when it is
 *    offered, and otherwise just says goodbye.
 * 3. When the user's latest message contains an offered tool's function name (as a whole word,
 *    any case), it calls that tool with the message's `key=value` pairs as arguments (quoted
 *    values allowed; `12`, `3.5`, `true`, `false` become numbers and booleans).
 * 4. Otherwise it answers from the knowledge base: from the best passage (highest score), the
 *    MAX_SENTENCES sentences sharing the most content words with the user's message (in the
 *    passage's order; the first sentence when none shares a word); with no passage, NO_ANSWER.
 *
 * Asked to stream (`onDelta`), it gives its reply word by word. A request whose `signal` aborts
 * stops streaming at once and rejects (a cancelled LlmError), as the `openai` adapter does.
 *
 * Replies and choices depend only on the request; the tool call ids are random like a provider's
 * (a webhook tool's `webhook-id` is the call id, and receivers de-duplicate on it). Usage is 0.
 */

export const NO_ANSWER = "I'm sorry, I don't have information about that.";
export const GOODBYE = 'Thank you for talking with me. Goodbye!';
/** Sentences of the best passage in a knowledge-base answer. */
export const MAX_SENTENCES = 2;
/** The longest knowledge-base answer, in characters. */
export const MAX_ANSWER_CHARS = 600;
/** The most of one tool result quoted in the reply. */
const MAX_RESULT_CHARS = 500;

export interface LocalModelOptions {
  /** Tool call ids (tests); default `call_` and 24 random hex digits. */
  newId?: () => string;
}

/** The content words of a text, folded like the knowledge-base ranking folds them (stop words dropped). */
export function contentWords(text: string): Set<string> {
  const out = new Set<string>();
  for (const word of text.match(/[\p{L}\p{N}]+/gu) ?? []) {
    const t = normalizeTerm(word);
    if (t) out.add(t);
  }
  return out;
}

/** A text's sentences: split after `.`, `!` or `?` followed by a space, and at line breaks. */
export function sentences(text: string): string[] {
  return text
    .split(/\n+|(?<=[.!?])\s+/)
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1).trimEnd()}…`;
}

/** The answer from the best passage to `question`; NO_ANSWER when there is no passage. */
export function answerFromPassages(passages: LlmPassage[], question: string): string {
  const best = passages.reduce<LlmPassage | undefined>((top, p) => (!top || p.score > top.score ? p : top), undefined);
  if (!best) return NO_ANSWER;
  const asked = contentWords(question);
  const scored = sentences(best.text).map((text, index) => {
    let shared = 0;
    for (const word of contentWords(text)) if (asked.has(word)) shared++;
    return { text, index, shared };
  });
  if (!scored.length) return NO_ANSWER;
  const chosen = scored
    .filter((s) => s.shared > 0)
    .sort((a, b) => b.shared - a.shared || a.index - b.index)
    .slice(0, MAX_SENTENCES)
    .sort((a, b) => a.index - b.index);
  return clip((chosen.length ? chosen : scored.slice(0, 1)).map((s) => s.text).join(' '), MAX_ANSWER_CHARS);
}

/** `key=value` pairs of a message: quoted values stay text; numbers and booleans become those types. */
export function keyValueArguments(text: string): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const m of text.matchAll(/(?<![\w.-])([A-Za-z_][\w.-]*)=(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+))/g)) {
    const [, key, doubleQuoted, singleQuoted, bare] = m;
    if (doubleQuoted !== undefined) args[key] = doubleQuoted.replace(/\\(.)/g, '$1');
    else if (singleQuoted !== undefined) args[key] = singleQuoted;
    else {
      const value = bare.replace(/[.,;:!?)]+$/, '') || bare;
      if (/^-?(0|[1-9]\d*)(\.\d+)?$/.test(value)) args[key] = Number(value);
      else if (/^(true|false)$/i.test(value)) args[key] = value.toLowerCase() === 'true';
      else args[key] = value;
    }
  }
  return args;
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const mentions = (text: string, name: string) => new RegExp(`(?<![\\w-])${escapeRegExp(name)}(?![\\w-])`, 'i').test(text);
const saysGoodbye = (text: string) => /\b(good[\s-]?bye|bye(?:[\s-]bye)?)\b/i.test(text);

/** The text after a step's tool results: a goodbye after `end_call`, else what each tool answered. */
function resultsReply(results: Extract<LlmMessage, { role: 'tool' }>[]): string {
  const parts = results.map((r) => {
    let value: unknown = r.content;
    try {
      value = JSON.parse(r.content);
    } catch {
      // Plain text: quoted as it is.
    }
    const error = value && typeof value === 'object' && !Array.isArray(value) ? (value as { error?: unknown }).error : undefined;
    if (r.name === 'end_call' && error === undefined) return GOODBYE;
    if (error !== undefined) return `The ${r.name} tool failed: ${clip(typeof error === 'string' ? error : JSON.stringify(error), MAX_RESULT_CHARS)}.`;
    const shown = typeof value === 'string' ? value.replace(/\s+/g, ' ').trim() : JSON.stringify(value);
    return `The ${r.name} tool answered: ${clip(shown, MAX_RESULT_CHARS)}`;
  });
  // One goodbye is enough, and it comes last.
  const said = parts.filter((p) => p !== GOODBYE);
  if (parts.includes(GOODBYE)) said.push(GOODBYE);
  return said.join(' ');
}

/** The tools the user's latest message names, each called with the message's `key=value` pairs. */
function namedToolCalls(userText: string, tools: LlmTool[], newId: () => string): LlmToolCall[] {
  const named = tools.filter((t) => mentions(userText, t.name));
  if (!named.length) return [];
  const args = JSON.stringify(keyValueArguments(userText));
  return named.map((t) => ({ id: newId(), name: t.name, arguments: args }));
}

/** One step of the local model; pure but for the ids. */
export function localStep(request: LlmRequest, newId: () => string = defaultId): LlmResponse {
  const usage = { promptTokens: 0, completionTokens: 0 };
  const { messages } = request;
  const last = messages.at(-1);
  if (last?.role === 'tool') {
    // The results of the latest step: the tool messages after the last assistant message.
    let from = messages.length - 1;
    while (from > 0 && messages[from - 1].role === 'tool') from--;
    return { text: resultsReply(messages.slice(from) as Extract<LlmMessage, { role: 'tool' }>[]), toolCalls: [], usage };
  }
  const userText = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (last?.role === 'user' && saysGoodbye(userText)) {
    const endCall = request.tools.find((t) => t.name === 'end_call');
    if (endCall) return { text: '', toolCalls: [{ id: newId(), name: endCall.name, arguments: '{}' }], usage };
    return { text: GOODBYE, toolCalls: [], usage };
  }
  if (last?.role === 'user') {
    const toolCalls = namedToolCalls(userText, request.tools, newId);
    if (toolCalls.length) return { text: '', toolCalls, usage };
  }
  return { text: answerFromPassages(request.passages, userText), toolCalls: [], usage };
}

function defaultId(): string {
  return `call_${randomUUID().replace(/-/g, '').slice(0, 24)}`;
}

export function localModel(options: LocalModelOptions = {}): LlmPort {
  const newId = options.newId ?? defaultId;
  return {
    name: 'local',
    complete: async (request) => {
      const cancelled = () => new LlmError('timeout', 'The model request was cancelled by its caller', { provider: 'local', cancelled: true });
      if (request.signal?.aborted) throw cancelled();
      const response = withOptions(localStep(request, newId), request, newId);
      if (request.onDelta && response.text) await streamWords(response.text, request.onDelta, request.signal);
      // Cancelled while it streamed: the words after went nowhere, and the caller gets no answer.
      if (request.signal?.aborted) throw cancelled();
      return response;
    },
  };
}

/**
 * The OpenAI-compatible endpoint's fields, as the local model honours them: a forced tool is
 * called (with no arguments) when the step did not call one; `maxTokens` keeps that many words;
 * a JSON `responseFormat` answers `{"reply": text}`.
 */
function withOptions(response: LlmResponse, request: LlmRequest, newId: () => string): LlmResponse {
  const options = request.options;
  if (!options) return response;
  const forced = options.toolChoice && request.tools.length && request.messages.at(-1)?.role !== 'tool'
    ? request.tools.find((t) => options.toolChoice === 'required' || t.name === (options.toolChoice as { name: string }).name)
    : undefined;
  if (forced && !response.toolCalls.some((c) => c.name === forced.name || options.toolChoice === 'required')) {
    return { text: '', toolCalls: [{ id: newId(), name: forced.name, arguments: '{}' }], usage: response.usage };
  }
  let text = response.text;
  if (text && options.maxTokens !== undefined) text = (text.match(/\S+\s*/g) ?? []).slice(0, options.maxTokens).join('').trimEnd();
  if (text && options.responseFormat && options.responseFormat.type !== 'text') text = JSON.stringify({ reply: text });
  return { ...response, text };
}

/** Gives a reply word by word (each word with the spaces after it), a turn of the event loop apart, as a streaming model would; stops at once when `signal` aborts. */
export async function streamWords(text: string, onDelta: (text: string) => void, signal?: AbortSignal): Promise<void> {
  for (const word of text.match(/\S+\s*|\s+/g) ?? []) {
    if (signal?.aborted) return;
    onDelta(word);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}

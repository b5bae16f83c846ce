import { normalizeTerm } from '../../domain/rag/ranker';
import type { LlmMessage, LlmPort, LlmRequest, LlmResponse, LlmToolCall } from './port';

/**
 * The local model (LLM_PROVIDER=local, the default): a small deterministic stand-in for
 * development and tests. It is NOT a language model and does not follow the prompt. Its rules
 * (docs/api.md, "The local model"):
 * - after tool results it answers in text, saying what each tool answered (it never loops);
 * - when the user says goodbye (`bye`, `goodbye`) and `end_call` is offered, it calls `end_call`;
 * - when the user's message contains an offered tool's function name, it calls that tool with
 *   the message's `key=value` pairs as arguments (numbers and true/false typed; quotes allowed);
 * - otherwise it answers from the knowledge base: the best passage's one or two sentences that
 *   share the most words with the message, or says it has no answer when nothing matched.
 */

export const NO_ANSWER = "I'm sorry, I don't have information about that.";
const GOODBYE = /\b(good\s?bye|bye)\b/i;
const PAIR = /([A-Za-z_][A-Za-z0-9_.-]*)=("([^"]*)"|'([^']*)'|(\S+))/g;
const zeroUsage = { promptTokens: 0, completionTokens: 0 };

const words = (text: string) => new Set((text.match(/[\p{L}\p{N}]+/gu) ?? []).map(normalizeTerm).filter((w): w is string => !!w));

function typed(raw: string): unknown {
  if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return raw;
}

/** The `key=value` pairs of a message. */
export function pairsOf(text: string): Record<string, unknown> {
  const args: Record<string, unknown> = {};
  for (const m of text.matchAll(PAIR)) {
    const quoted = m[3] ?? m[4];
    args[m[1]!] = quoted !== undefined ? quoted : typed(m[5]!.replace(/[.,!?;:]+$/, ''));
  }
  return args;
}

/** The one or two sentences of `passage` that share the most words with `question`, in their order. */
export function bestSentences(passage: string, question: string, max = 2): string {
  const asked = words(question);
  const sentences = passage.replace(/\s+/g, ' ').match(/[^.!?]+[.!?]*/g)?.map((s) => s.trim()).filter(Boolean) ?? [passage];
  const scored = sentences.map((text, i) => ({ text, i, score: [...words(text)].filter((w) => asked.has(w)).length }));
  const chosen = [...scored].sort((a, b) => b.score - a.score || a.i - b.i).slice(0, max).filter((s, k) => k === 0 || s.score > 0);
  return chosen.sort((a, b) => a.i - b.i).map((s) => s.text).join(' ');
}

const compact = (text: string) => (text.length > 500 ? `${text.slice(0, 500)}…` : text);

function afterTools(messages: LlmMessage[]): string {
  const results: string[] = [];
  for (let i = messages.length - 1; i >= 0 && messages[i]!.role === 'tool'; i--) {
    const m = messages[i] as Extract<LlmMessage, { role: 'tool' }>;
    let error: string | undefined;
    try {
      const parsed = JSON.parse(m.content) as { error?: unknown };
      if (parsed && typeof parsed === 'object' && typeof parsed.error === 'string') error = parsed.error;
    } catch {
      // a text answer
    }
    if (m.name === 'end_call' && !error) results.unshift('Thank you for reaching out. Goodbye!');
    else results.unshift(error ? `The ${m.name} tool failed: ${error}` : `The ${m.name} tool answered: ${compact(m.content)}`);
  }
  return results.join(' ');
}

export function localModel(): LlmPort {
  return {
    name: 'local',
    async complete(request: LlmRequest): Promise<LlmResponse> {
      const last = request.messages[request.messages.length - 1];
      if (!last) return { text: '', toolCalls: [], usage: zeroUsage };
      if (last.role === 'tool') return { text: afterTools(request.messages), toolCalls: [], usage: zeroUsage };
      if (last.role !== 'user') return { text: '', toolCalls: [], usage: zeroUsage };
      const said = request.messages.filter((m) => m.role === 'assistant').reduce((n, m) => n + ((m as { toolCalls?: unknown[] }).toolCalls?.length ?? 0), 0);
      const call = (name: string, args: Record<string, unknown>): LlmResponse => {
        const toolCall: LlmToolCall = { id: `call_local_${said + 1}`, name, arguments: JSON.stringify(args) };
        return { text: '', toolCalls: [toolCall], usage: zeroUsage };
      };
      const offered = new Set(request.tools.map((t) => t.name));
      if (GOODBYE.test(last.content)) {
        if (offered.has('end_call')) return call('end_call', {});
        return { text: 'Goodbye!', toolCalls: [], usage: zeroUsage };
      }
      const named = request.tools.find((t) => t.name !== 'end_call' && new RegExp(`(^|[^A-Za-z0-9_-])${t.name.replace(/[-]/g, '\\-')}($|[^A-Za-z0-9_-])`).test(last.content));
      if (named) return call(named.name, pairsOf(last.content));
      const best = request.passages[0];
      return { text: best ? bestSentences(best.text, last.content) : NO_ANSWER, toolCalls: [], usage: zeroUsage };
    },
  };
}

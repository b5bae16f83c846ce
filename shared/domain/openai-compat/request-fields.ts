import type { LlmCallOptions } from '../../adapters/llm/port';
import { ValidationError } from '../../errors';
import type { ChatCompletionBody } from './schemas';

/**
 * Every Chat Completions request field, honoured or refused (docs/api.md, "The agent as an OpenAI
 * model"): a compatible server never ignores a field that changes the answer. Honoured fields are
 * read here into what the model is asked (`LlmCallOptions`); a value we cannot honour is a 400
 * `invalid_request_error` naming the field as `param`, as is a field OpenAI does not have.
 */

/** Read by the endpoint itself (completions.ts) or the schema. */
const READ_ELSEWHERE = new Set(['model', 'messages', 'tools', 'tool_choice', 'stream', 'stream_options', 'temperature', 'user']);
/** Sent to the model as they are (the local model, deterministic, has no sampling to shape). */
const SAMPLING = new Set(['top_p', 'seed', 'stop', 'frequency_penalty', 'presence_penalty', 'parallel_tool_calls']);
/** Fields that change no answer (OpenAI's own: abuse monitoring, caching, storage for its dashboard): accepted, documented as such. */
// `user` is read by completions.ts: under a traffic split it is the person the draw sticks to.
const NO_EFFECT = new Set(['safety_identifier', 'prompt_cache_key', 'metadata', 'store', 'service_tier']);
/** Fields whose only value we can honour is their default (the value that asks for nothing). */
const DEFAULT_ONLY: Record<string, { ok: (v: unknown) => boolean; why: string }> = {
  n: { ok: (v) => v === 1, why: 'only 1 choice is generated per request' },
  logprobs: { ok: (v) => v === false, why: 'log probabilities are not available' },
  top_logprobs: { ok: (v) => v === 0, why: 'log probabilities are not available' },
  logit_bias: { ok: (v) => typeof v === 'object' && v !== null && Object.keys(v).length === 0, why: 'logit bias is not supported' },
  modalities: { ok: (v) => Array.isArray(v) && v.every((m) => m === 'text'), why: 'only the "text" modality is supported' },
  audio: { ok: () => false, why: 'audio output is not supported' },
  prediction: { ok: () => false, why: 'predicted outputs are not supported' },
  web_search_options: { ok: () => false, why: 'web search is not supported' },
  reasoning_effort: { ok: () => false, why: 'the agent\'s model settings are the agent\'s' },
  verbosity: { ok: () => false, why: 'the agent\'s model settings are the agent\'s' },
  functions: { ok: () => false, why: 'deprecated: send `tools`' },
  function_call: { ok: () => false, why: 'deprecated: send `tool_choice`' },
};

const refuse = (param: string, message: string) => ValidationError.field(param, message);

function positiveInt(value: unknown, param: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) throw refuse(param, 'must be a positive integer');
  return value;
}

/** The tool_choice asked for, checked against the tools offered (`none` is handled by offering none). */
function toolChoiceOf(value: unknown, offered: string[]): LlmCallOptions['toolChoice'] | 'none' | undefined {
  if (value === undefined || value === null || value === 'auto') return undefined;
  if (value === 'none') return 'none';
  if (value === 'required') {
    if (!offered.length) throw refuse('tool_choice', '"required" needs at least one tool');
    return 'required';
  }
  const named = value as { type?: unknown; function?: { name?: unknown } };
  if (typeof value === 'object' && named.type === 'function' && typeof named.function?.name === 'string') {
    const name = named.function.name;
    if (!offered.includes(name)) throw refuse('tool_choice.function.name', `"${name}" is not one of the tools offered (${offered.join(', ') || 'none'})`);
    return { name };
  }
  throw refuse('tool_choice', 'must be "none", "auto", "required" or { "type": "function", "function": { "name" } }');
}

/** The request's fields as model options; throws a 400 naming the first field it cannot honour. `offered`: the tools' names. */
export function modelOptionsOf(body: ChatCompletionBody, offered: string[]): { options: LlmCallOptions; offerTools: boolean } {
  const options: LlmCallOptions = {};
  const sampling: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(body as Record<string, unknown>)) {
    if (value === undefined || value === null || READ_ELSEWHERE.has(field) || NO_EFFECT.has(field)) continue;
    if (SAMPLING.has(field)) sampling[field] = value;
    else if (field === 'max_completion_tokens' || field === 'max_tokens') options.maxTokens = positiveInt(value, field);
    else if (field === 'response_format') {
      const format = value as { type?: unknown; json_schema?: unknown };
      if (format.type === 'text') continue;
      if (format.type === 'json_object') options.responseFormat = { type: 'json_object' };
      else if (format.type === 'json_schema' && typeof format.json_schema === 'object' && format.json_schema) options.responseFormat = value as Record<string, unknown>;
      else throw refuse('response_format', 'must be { "type": "text" }, { "type": "json_object" } or { "type": "json_schema", "json_schema": {…} }');
    } else if (field in DEFAULT_ONLY) {
      if (!DEFAULT_ONLY[field]!.ok(value)) throw refuse(field, DEFAULT_ONLY[field]!.why);
    } else throw refuse(field, `Unrecognized request argument supplied: ${field}`);
  }
  // max_completion_tokens wins over the deprecated max_tokens, as at OpenAI.
  const maxCompletion = (body as { max_completion_tokens?: unknown }).max_completion_tokens;
  if (typeof maxCompletion === 'number') options.maxTokens = maxCompletion;
  if (Object.keys(sampling).length) options.sampling = sampling;
  const choice = toolChoiceOf(body.tool_choice, offered);
  if (choice && choice !== 'none') options.toolChoice = choice;
  return { options, offerTools: choice !== 'none' };
}

/**
 * The conversation model behind one port (the shape of the Vercel AI SDK's `generateText`, one
 * step at a time): the engine hands over the filled prompt, the knowledge-base passages, the
 * conversation so far and the tools it may call, and gets back text, tool calls and usage.
 * Adapters: `local` (a small deterministic model, the default, no account) and `openai` (any
 * OpenAI-compatible Chat Completions API with tool calling). LLM_PROVIDER chooses.
 */

/** A tool the model may call this step, as the model sees it. */
export interface LlmTool {
  /** The function name the model calls (a built-in's type, or a tool's `definition.name`). */
  name: string;
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
}

/** A tool call the model made. */
export interface LlmToolCall {
  /** The model's own id of the call (`call_…`), echoed in the tool result. */
  id: string;
  name: string;
  /** The arguments as the model wrote them (JSON text); the engine parses and validates them. */
  arguments: string;
}

/** One message of the conversation so far, in Chat Completions' roles. */
export type LlmMessage =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; toolCallId: string; name: string; content: string };

/** A knowledge-base passage that grounds the reply. */
export interface LlmPassage {
  doc_id: string;
  url: string | null;
  text: string;
  score: number;
}

export interface LlmRequest {
  /** The agent's `model` (the adapter may fall back to its configured default when empty). */
  model: string;
  temperature: number;
  /** The filled `prompt`: the system message. */
  system: string;
  /** Passages retrieved for the latest user message (untrusted text: the openai adapter sends them as delimited reference data in a user message, never as a system message). */
  passages: LlmPassage[];
  /** The conversation so far, oldest first, ending with the user's message or tool results. */
  messages: LlmMessage[];
  /** Tools offered this step; empty means the model must answer in text. */
  tools: LlmTool[];
  /** Wall-clock budget for this request (the adapter aborts past it). */
  timeoutMs?: number;
  /**
   * Cancels the request (a relay reply interrupted or superseded): once aborted, the adapter ends
   * the HTTP request to the model (its connection closed, the stream no longer read), calls
   * `onDelta` no more and rejects with an LlmError (`details.cancelled`). Optional: absent, the
   * request runs to its end or its timeout.
   */
  signal?: AbortSignal;
  /**
   * Streaming: called with each piece of the reply's text as the model produces it (the `openai`
   * adapter then asks with `stream: true`; the local model gives its reply word by word). The
   * pieces joined are the response's `text`; `complete` still resolves with the whole response.
   * An adapter that cannot stream may never call it (the engine then passes the text on whole).
   */
  onDelta?: (text: string) => void;
  /**
   * Called as the request leaves for the model (after the adapter's own preparation: its key
   * read, the body built, the connection had and the request written to it): where a reply's
   * `latency_ms.model` starts; again if the request is sent again (the later call wins).
   * Optional: an adapter that never calls it leaves the start at the call of `complete`.
   */
  onSent?: () => void;
  /** What a caller of the OpenAI-compatible endpoint asked of the model beyond the agent's settings (absent elsewhere). */
  options?: LlmCallOptions;
}

/**
 * Chat Completions request fields a caller of the OpenAI-compatible endpoint may set
 * (shared/domain/openai-compat): each is sent to an OpenAI-compatible model as that field, and the
 * local model honours the ones that shape its answer (`maxTokens`, `toolChoice`, `responseFormat`).
 */
export interface LlmCallOptions {
  /** `max_completion_tokens`: the most tokens the reply may have. */
  maxTokens?: number;
  /** `tool_choice` other than `auto` (`none` is sent as no tools). */
  toolChoice?: 'required' | { name: string };
  /** `response_format` (`json_object` or `json_schema`). */
  responseFormat?: Record<string, unknown>;
  /** Sampling fields passed as they are: `top_p`, `seed`, `stop`, `frequency_penalty`, `presence_penalty`, `parallel_tool_calls`. */
  sampling?: Record<string, unknown>;
}

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface LlmResponse {
  /** The reply text ('' when the step only calls tools). */
  text: string;
  toolCalls: LlmToolCall[];
  usage: LlmUsage;
  /** The provider's finish reason (`stop`, `tool_calls`, `length`…), when it gave one (traces record it). */
  finishReason?: string;
}

export type LlmProviderName = 'local' | 'openai';

export interface LlmPort {
  readonly name: LlmProviderName;
  complete(request: LlmRequest): Promise<LlmResponse>;
}

/** Why a model request failed. Retrying can cure `timeout`, `unreachable`, `rate_limited` and `provider_error` (a turn answers 503 with Retry-After); not the others (502). */
export type LlmFailureReason = 'timeout' | 'unreachable' | 'rate_limited' | 'provider_error' | 'unauthorized' | 'rejected' | 'malformed' | 'not_configured';

/** A failed model request. `retryAfterSeconds` is what a 503 tells the caller (the provider's own when it said). */
export class LlmError extends Error {
  constructor(
    readonly reason: LlmFailureReason,
    message: string,
    readonly details: {
      provider: LlmProviderName;
      status?: number;
      retryAfterSeconds?: number;
      /** The provider's own error message (at most 500 characters, credentials blanked). */
      providerMessage?: string;
      /** The provider's error `code` (`model_not_found`, `context_length_exceeded`, …). */
      providerCode?: string;
      [key: string]: unknown;
    },
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LlmError';
  }
}

const RETRYABLE: ReadonlySet<LlmFailureReason> = new Set(['timeout', 'unreachable', 'rate_limited', 'provider_error']);

/** Whether sending the same request again later may succeed (a timeout, 429, 5xx, an unreachable provider). */
export const isRetryable = (err: LlmError): boolean => RETRYABLE.has(err.reason);

/**
 * What an API answer says about a failure retrying cannot cure (docs/api.md, "The model"):
 * `unauthorized` (401/403), `unknown_model` (404, or the provider's `model_not_found`),
 * `provider_rejected` (another 4xx: a request the provider refuses), `malformed_answer` (not a
 * chat completion), `no_api_key` (no key configured).
 */
export function permanentReason(err: LlmError): 'unauthorized' | 'unknown_model' | 'provider_rejected' | 'malformed_answer' | 'no_api_key' {
  if (err.reason === 'unauthorized') return 'unauthorized';
  if (err.reason === 'not_configured') return 'no_api_key';
  if (err.reason === 'malformed') return 'malformed_answer';
  if (err.details.status === 404 || err.details.providerCode === 'model_not_found') return 'unknown_model';
  return 'provider_rejected';
}

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
  /** Passages retrieved for the latest user message (the openai adapter sends them as a second system message). */
  passages: LlmPassage[];
  /** The conversation so far, oldest first, ending with the user's message or tool results. */
  messages: LlmMessage[];
  /** Tools offered this step; empty means the model must answer in text. */
  tools: LlmTool[];
  /** Wall-clock budget for this request (the adapter aborts past it). */
  timeoutMs?: number;
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
}

export type LlmProviderName = 'local' | 'openai';

export interface LlmPort {
  readonly name: LlmProviderName;
  complete(request: LlmRequest): Promise<LlmResponse>;
}

/** Why a model request failed; every one of them makes a turn answer 503 with Retry-After and keep nothing. */
export type LlmFailureReason = 'timeout' | 'unreachable' | 'rate_limited' | 'provider_error' | 'unauthorized' | 'rejected' | 'malformed' | 'not_configured';

/** A failed model request. `retryAfterSeconds` is what the 503 tells the caller (the provider's own when it said). */
export class LlmError extends Error {
  constructor(
    readonly reason: LlmFailureReason,
    message: string,
    readonly details: { provider: LlmProviderName; status?: number; retryAfterSeconds?: number; [key: string]: unknown } ,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'LlmError';
  }
}

/**
 * Post-call analysis behind one port: the calls' analysis job hands over the transcript and
 * the agent's analysis settings and gets a summary, the caller's sentiment, whether the call
 * succeeded, and custom fields. Adapters: `local` (no account, the default) and `openai` (any
 * OpenAI-compatible chat-completions API with structured output).
 */
export interface TranscriptTurn {
  /** `system`: the platform's own line (a warm transfer's briefing and outcome). */
  role: 'agent' | 'user' | 'system';
  text: string;
  time_sec: number;
}

export interface AnalysisInput {
  transcript: TranscriptTurn[];
  /** The agent's `post_call_analysis_model`; null or empty: the configured default. */
  model: string | null;
  /** The agent's `analysis_summary_prompt`; null or empty: the built-in instructions. */
  summaryPrompt: string | null;
  /** The call's `disconnection_reason` (`completed`, `no_answer`, …). */
  disconnectionReason: string;
  durationSec: number;
  /** The agent's `analysis_fields` (typed outcomes): `data` gets one member per field. None: `data` is `{}`. */
  fields?: AnalysisField[];
  /** The agent's `success_criteria`: what `successful` is judged against; null or empty: the analyzer's own rule. */
  successCriteria?: string | null;
  /** Who handled the conversation when it was handed off between agents (its segments, in order); absent: one agent. */
  segments?: { agent_id: string; agent_version: number | null; started_at: string; reason: string | null }[];
}

/** The types an analysis field may have (docs/api.md, "Typed outcomes"). */
export const ANALYSIS_FIELD_TYPES = ['string', 'number', 'integer', 'boolean', 'enum'] as const;
export type AnalysisFieldType = (typeof ANALYSIS_FIELD_TYPES)[number];

/** One typed outcome the analysis fills: an agent's `analysis_fields` item. */
export interface AnalysisField {
  name: string;
  type: AnalysisFieldType;
  description: string;
  /** The allowed values of an `enum` field (2–50); absent for the other types. */
  options?: string[];
}

/** A typed outcome's value: of its field's type, or null (not said, not evaluated, or refused as the wrong type). */
export type FieldValue = string | number | boolean | null;

/** A value the analyzer refused because it was not of its field's type (stored as null, never as given). */
export interface DataError {
  field: string;
  message: string;
}

export const SENTIMENTS = ['positive', 'neutral', 'negative'] as const;
export type Sentiment = (typeof SENTIMENTS)[number];

export interface CallAnalysis {
  summary: string;
  sentiment: Sentiment;
  successful: boolean;
  custom: Record<string, unknown>;
  /** One member per analysis field: its value, or null. */
  data: Record<string, FieldValue>;
  /** The type of each member of `data`, as its field was when analysed (the analytics count boolean and enum values). */
  data_types: Record<string, AnalysisFieldType>;
  /** Values refused because they were not of their field's type (each stored as null). */
  data_errors: DataError[];
  /** Why `successful` is what it is (against `success_criteria` when set); null when the analyzer gives no reason. */
  success_rationale: string | null;
}

export type AnalysisProviderName = 'local' | 'openai';

export interface AnalysisPort {
  readonly name: AnalysisProviderName;
  analyze(input: AnalysisInput): Promise<CallAnalysis>;
}

/** Why an analysis failed; the call keeps `analysis` null with this reason and the queue retries. */
export type AnalysisFailureReason =
  /** The provider did not answer within the timeout. */
  | 'timeout'
  /** The provider could not be reached (DNS, connection refused, reset). */
  | 'unreachable'
  /** The provider throttled us (HTTP 429). */
  | 'rate_limited'
  /** The provider failed (HTTP 5xx). */
  | 'provider_error'
  /** The provider refused our credentials (HTTP 401 or 403). */
  | 'unauthorized'
  /** The provider refused the request itself (another 4xx: unknown model, bad schema …). */
  | 'rejected'
  /** The model declined to answer (a structured-output refusal). */
  | 'refused'
  /** The answer was not a chat completion holding a CallAnalysis JSON. */
  | 'malformed'
  /** The adapter has no API key or secret to use. */
  | 'not_configured';

/** Reasons a later attempt may cure by itself. */
const TRANSIENT: ReadonlySet<AnalysisFailureReason> = new Set(['timeout', 'unreachable', 'rate_limited', 'provider_error', 'malformed']);

/** A failed analysis: `reason` is what the call keeps; `retryable` says whether trying again may help. */
export class AnalysisError extends Error {
  readonly retryable: boolean;

  constructor(
    readonly reason: AnalysisFailureReason,
    message: string,
    readonly details: { provider: AnalysisProviderName; status?: number; [key: string]: unknown },
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AnalysisError';
    this.retryable = TRANSIENT.has(reason);
  }
}

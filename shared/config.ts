/**
 * Configuration read once from the environment. Required settings fail fast with a
 * message that names the variable; the local runtime sets every one of them.
 */
export interface Config {
  tableName: string;
  bucketName: string;
  region: string;
  /** Set only by the local runtime: DynamoDB Local's endpoint. */
  dynamoEndpoint?: string;
  /** Set only by the local runtime: the S3-compatible server's endpoint. */
  s3Endpoint?: string;
  /** Public base URL of the API, used in links handed to clients and in the carrier's callback URLs. */
  publicBaseUrl?: string;
  /** Where Twilio streams a call's media (`wss://…`): the agent's voice runtime (VOICE_RUNTIME_URL). */
  voiceRuntimeUrl?: string;
  /** Version string reported by GET /health. */
  version: string;
  /** Seconds an API key lookup stays cached in memory. */
  apiKeyCacheSeconds: number;
  /** Requests per minute per API key, unless the organization sets its own. */
  rateLimitPerMinute: number;
  /** How long the rate-limit counter write may take before the request goes on without it (fail open). */
  rateLimitTimeoutMs: number;
  /**
   * How the per-key limit is counted: `lease` (default: each process claims slices of a key's
   * minute and spends them in memory) or `request` (one counter write per request, the way before
   * leases; kept for the benchmark's comparison). RATE_LIMIT_MODE.
   */
  rateLimitMode: 'lease' | 'request';
  /** The operator's ceiling on an organization's simultaneous live calls, unless the admin command sets its own (CONCURRENCY_CEILING). */
  concurrencyCeiling: number;
  /** Lets outbound fetches (crawler, webhooks) reach loopback addresses. Local only. */
  allowLoopbackFetch: boolean;
  /** `local` in the local runtime, `aws` when deployed. */
  runtime: 'local' | 'aws';
  /** The conversation model (shared/adapters/llm): the adapter and, for `openai`, where and how to call it. */
  llm: {
    provider: 'local' | 'openai';
    /** Base URL of an OpenAI-compatible API (`…/v1`); requests go to `{baseUrl}/chat/completions`. */
    baseUrl: string;
    /** Model used when the agent names none. */
    defaultModel: string;
    /** How long one model request may take (a turn's remaining budget may cut it shorter). */
    timeoutMs: number;
  };
  /** Post-call analysis (shared/adapters/analysis): the adapter and, for `openai`, where and how to call it. */
  analysis: {
    provider: 'local' | 'openai';
    /** Base URL of an OpenAI-compatible API (`…/v1`); requests go to `{baseUrl}/chat/completions`. */
    baseUrl: string;
    /** Model used when the agent names none. */
    defaultModel: string;
    /** How long one analysis request may take. */
    timeoutMs: number;
  };
}

let cached: Config | undefined;

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`Missing required setting ${name}: set it in the environment (the CDK stack and the local runtime both do).`);
  return value;
}

function int(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) throw new Error(`Setting ${name} must be a non-negative number, got "${raw}".`);
  return n;
}

function oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) throw new Error(`Setting ${name} must be one of ${allowed.join(', ')}, got "${raw}".`);
  return raw as T;
}

/** The process configuration, read from the environment on first use. */
export function config(): Config {
  if (cached) return cached;
  cached = {
    tableName: required('TABLE_NAME'),
    bucketName: required('BUCKET_NAME'),
    region: process.env.AWS_REGION ?? 'us-east-1',
    dynamoEndpoint: process.env.DYNAMODB_ENDPOINT || undefined,
    s3Endpoint: process.env.S3_ENDPOINT || undefined,
    publicBaseUrl: process.env.PUBLIC_BASE_URL || undefined,
    voiceRuntimeUrl: process.env.VOICE_RUNTIME_URL || undefined,
    version: process.env.APP_VERSION ?? '0.1.0',
    apiKeyCacheSeconds: int('API_KEY_CACHE_SECONDS', 10),
    rateLimitPerMinute: int('RATE_LIMIT_PER_MINUTE', 1200),
    rateLimitTimeoutMs: int('RATE_LIMIT_TIMEOUT_MS', 100),
    rateLimitMode: oneOf('RATE_LIMIT_MODE', ['lease', 'request'] as const, 'lease'),
    concurrencyCeiling: Math.max(1, int('CONCURRENCY_CEILING', 20)),
    allowLoopbackFetch: process.env.ALLOW_LOOPBACK_FETCH === 'true',
    runtime: process.env.RUNTIME === 'local' ? 'local' : 'aws',
    llm: modelSettings('LLM'),
    analysis: modelSettings('ANALYSIS'),
  };
  return cached;
}

/** A model provider's settings from its `<PREFIX>_*` variables (LLM_* for conversations, ANALYSIS_* for analysis). */
function modelSettings(prefix: 'LLM' | 'ANALYSIS'): Config['llm'] {
  return {
    provider: oneOf(`${prefix}_PROVIDER`, ['local', 'openai'] as const, 'local'),
    baseUrl: (process.env[`${prefix}_BASE_URL`] || 'https://api.openai.com/v1').replace(/\/+$/, ''),
    defaultModel: process.env[`${prefix}_MODEL`] || 'gpt-4o-mini',
    timeoutMs: int(`${prefix}_TIMEOUT_MS`, 20_000),
  };
}

/**
 * The speech-to-speech model a call uses when its agent's `s2s_model` is empty (REALTIME_MODEL).
 * Read at each use, as the voice runtime reads its settings per session.
 */
export function defaultSpeechModel(): string {
  return process.env.REALTIME_MODEL || 'gpt-realtime';
}

/** Which models answer in this process, each said in one line (the local runtime prints them at start). */
export interface ModelsInUse {
  /** Chats, the widget and simulated calls (LLM_*). */
  conversation: string;
  /** Calls through the voice runtime (REALTIME_*). */
  speech: string;
  /** Post-call and post-chat analysis (ANALYSIS_*). */
  analyzer: string;
  /** True when the conversation model is the local rules, not a language model. */
  localRules: boolean;
}

/**
 * What answers conversations, calls and analyses with the settings in the environment, saying
 * plainly when the local rules answer (no language model) and when a key is missing. Reads the
 * environment, not the cached config, so it needs no table settings.
 */
export function modelsInUse(): ModelsInUse {
  const env = process.env;
  const llm = modelSettings('LLM');
  const analysis = modelSettings('ANALYSIS');
  const noKey = (prefix: string) => (env[`${prefix}_API_KEY`] || env[`${prefix}_SECRET_ARN`] || env[`${prefix}_SECRET_NAME`] ? '' : `; ${prefix}_API_KEY is not set`);
  const remote = (model: string, baseUrl: string, prefix: string) => `${model} at ${baseUrl}${noKey(prefix)}`;
  const realtimeUrl = env.REALTIME_BASE_URL || 'wss://api.openai.com/v1/realtime';
  return {
    conversation: llm.provider === 'openai'
      ? `${remote(llm.defaultModel, llm.baseUrl, 'LLM')} (agents whose model is empty)`
      : 'local rules, not a language model (LLM_PROVIDER=local; set LLM_PROVIDER=openai, LLM_BASE_URL, LLM_MODEL for one)',
    speech: `${defaultSpeechModel()} at ${realtimeUrl}${env.REALTIME_API_KEY ? '' : '; REALTIME_API_KEY is not set'} (agents whose s2s_model is empty)`,
    analyzer: analysis.provider === 'openai'
      ? `${remote(analysis.defaultModel, analysis.baseUrl, 'ANALYSIS')} (agents whose post_call_analysis_model is empty)`
      : 'local rules, not a language model (ANALYSIS_PROVIDER=local)',
    localRules: llm.provider !== 'openai',
  };
}

/** Forget the cached configuration (tests and the local runtime change the environment). */
export function resetConfig(): void {
  cached = undefined;
}

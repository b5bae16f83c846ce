import { parseRetryAfter } from './errors.js';

/** How the client retries 429 and 503 answers. */
export interface RetryOptions {
  /** Attempts in all, the first included (default 4; 1 turns retries off). */
  maxAttempts?: number;
  /** The first backoff step in ms (default 500); attempt n waits up to `baseDelayMs · 2^(n-1)`. */
  baseDelayMs?: number;
  /** The largest backoff in ms (default 10,000). */
  maxDelayMs?: number;
  /** A `Retry-After` longer than this (ms, default 60,000) is not waited for: the error is thrown. */
  maxRetryAfterMs?: number;
  /** Called before each wait (logging, metrics). */
  onRetry?: (info: RetryInfo) => void;
  /** How to wait (default a timer, cut short by the request's abort signal); tests pass their own. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
}

export interface RetryInfo {
  method: string;
  url: string;
  status: number;
  /** The attempt that just failed (1 = the first request). */
  attempt: number;
  delayMs: number;
}

const DEFAULTS = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 };

/**
 * Whether an answer may be retried. 429 always: the API (its rate limit runs before validation and
 * the operation) and API Gateway's throttling both refuse before anything runs. 503 only when a
 * repeat is safe: any method but POST, or a POST carrying an Idempotency-Key (the API releases the
 * key of a request that failed, so the repeat runs once). No other status is ever retried.
 */
export function isRetryable(request: Request, status: number): boolean {
  if (status === 429) return true;
  if (status === 503) return request.method !== 'POST' || request.headers.has('idempotency-key');
  return false;
}

/**
 * The wait before the next attempt: `Retry-After` when the answer carries one (plus up to one base
 * step of jitter, so clients told the same moment do not all come back at once), else exponential
 * backoff with full jitter. Undefined when `Retry-After` asks for longer than `maxRetryAfterMs`.
 */
export function retryDelay(response: Response, attempt: number, options: RetryOptions = {}, now = Date.now()): number | undefined {
  const { baseDelayMs, maxDelayMs, maxRetryAfterMs } = { ...DEFAULTS, ...options };
  const random = options.random ?? Math.random;
  const retryAfter = parseRetryAfter(response.headers.get('retry-after'), now);
  if (retryAfter !== undefined) {
    return retryAfter > maxRetryAfterMs ? undefined : retryAfter + Math.floor(random() * baseDelayMs);
  }
  return Math.floor(random() * Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1)));
}

/** Wraps a fetch so that 429 and 503 answers are retried as `isRetryable` and `retryDelay` say. */
export function retryingFetch(base: (request: Request) => Promise<Response>, options: RetryOptions | false = {}): (request: Request) => Promise<Response> {
  if (options === false) return base;
  const maxAttempts = Math.max(1, options.maxAttempts ?? DEFAULTS.maxAttempts);
  const sleep = options.sleep ?? abortableSleep;
  return async (request) => {
    for (let attempt = 1; ; attempt++) {
      // A request's body can be read once: each attempt sends a copy, the last the original.
      const response = await base(attempt < maxAttempts ? request.clone() : request);
      if (attempt >= maxAttempts || !isRetryable(request, response.status)) return response;
      const delayMs = retryDelay(response, attempt, options);
      if (delayMs === undefined) return response;
      await response.body?.cancel().catch(() => undefined);
      options.onRetry?.({ method: request.method, url: request.url, status: response.status, attempt, delayMs });
      await sleep(delayMs, request.signal);
    }
  };
}

function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

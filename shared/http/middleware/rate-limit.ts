import { RateLimitedError } from '../../errors';
import { httpState } from '../context';
import { config } from '../../config';
import { logger } from '../../logger';
import { countRequest, type CountRequest } from '../../db/rate-counter';
import { counterExpiry, decide, secondsToEnd, windowAt } from '../../domain/rate-limit/window';
import type { HttpMiddleware } from './types';

/** Windows this process has seen full, by key id: no write is spent on a key until its window ends. */
const shared = new Map<string, number>();
const MAX_REMEMBERED = 10_000;

export interface RateLimitOptions {
  now?: () => number;
  defaultPerMinute?: number;
  /** The counter store (default: the table, shared/db/rate-counter.ts). */
  count?: (request: CountRequest) => Promise<number | null>;
  /** Milliseconds the counter may take before the request goes on uncounted (default RATE_LIMIT_TIMEOUT_MS). */
  timeoutMs?: number;
  /** This process's memory of full windows (tests give their own). */
  exhausted?: Map<string, number>;
}

/**
 * A per-key limit that holds across every process: a fixed one-minute window per API key,
 * counted in the table with one conditional UpdateItem per request (see
 * shared/domain/rate-limit/window.ts for why a fixed window). Every answer carries
 * X-RateLimit-Limit/Remaining/Reset; a 429 adds Retry-After (seconds to the window end).
 * When the counter fails or is slow the request is served uncounted (fail open) and a
 * warning is logged: the limit protects the platform, it must never be why a call fails.
 */
export function rateLimit(options: RateLimitOptions = {}): HttpMiddleware {
  const now = options.now ?? Date.now;
  const count = options.count ?? countRequest;
  const exhausted = options.exhausted ?? shared;
  return {
    name: 'rate-limit',
    before: async (request) => {
      const state = httpState(request);
      const caller = state.caller;
      if (!caller) return;
      const limit = caller.rateLimitPerMinute ?? options.defaultPerMinute ?? config().rateLimitPerMinute;
      if (!limit) return;
      const t = now();
      const window = windowAt(t);
      state.responseHeaders['x-ratelimit-limit'] = String(limit);
      if (exhausted.get(caller.keyId) === window.index) refuse(state.responseHeaders, secondsToEnd(window, t));

      let counted: number | null;
      const timeoutMs = options.timeoutMs ?? config().rateLimitTimeoutMs;
      const abort = new AbortController();
      const timer = setTimeout(() => abort.abort(new Error(`rate-limit counter took over ${timeoutMs} ms`)), timeoutMs);
      try {
        counted = await Promise.race([
          count({ keyId: caller.keyId, window: window.index, limit, expiresAt: counterExpiry(window), signal: abort.signal }),
          new Promise<never>((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason as Error))),
        ]);
      } catch (err) {
        logger.warn('rate limit not applied: the counter failed, request served uncounted', { key_id: caller.keyId, error: (err as Error).message });
        return;
      } finally {
        clearTimeout(timer);
      }
      const decision = decide(counted, limit, window, t);
      if (!decision.allowed) {
        if (exhausted.size >= MAX_REMEMBERED) exhausted.clear();
        exhausted.set(caller.keyId, window.index);
        refuse(state.responseHeaders, decision.resetSeconds);
      }
      state.responseHeaders['x-ratelimit-remaining'] = String(decision.remaining);
      state.responseHeaders['x-ratelimit-reset'] = String(decision.resetSeconds);
    },
  };
}

function refuse(headers: Record<string, string>, resetSeconds: number): never {
  headers['x-ratelimit-remaining'] = '0';
  headers['x-ratelimit-reset'] = String(resetSeconds);
  throw new RateLimitedError(resetSeconds);
}

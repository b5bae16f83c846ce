import { RateLimitedError } from '../../errors';
import { httpState } from '../context';
import { config } from '../../config';
import { logger } from '../../logger';
import { claimLease, countRequest, type CountRequest, type LeaseRequest } from '../../db/rate-counter';
import { counterExpiry, decide, secondsToEnd, windowAt, type RateDecision } from '../../domain/rate-limit/window';
import { LeaseBook, type Lease } from '../../domain/rate-limit/leases';
import type { HttpMiddleware } from './types';

/** Windows this process has seen full, by key id: no write is spent on a key until its window ends. */
const shared = new Map<string, number>();
const MAX_REMEMBERED = 10_000;
/** This process's leases (one book per process, shared by every operation it serves). */
let sharedBook: LeaseBook | undefined;

export interface RateLimitOptions {
  now?: () => number;
  defaultPerMinute?: number;
  /** `lease` or `request` (default config().rateLimitMode; see shared/config.ts). */
  mode?: 'lease' | 'request';
  /** Per-request counting's store (default: the table, shared/db/rate-counter.ts). */
  count?: (request: CountRequest) => Promise<number | null>;
  /** The lease store (default: the table, `claimLease`). Ignored when `leases` is given. */
  claim?: (request: LeaseRequest) => Promise<Lease>;
  /** This process's leases (tests give their own). */
  leases?: LeaseBook;
  /** Milliseconds a request may wait for the counter before it goes on uncounted (default RATE_LIMIT_TIMEOUT_MS). */
  timeoutMs?: number;
  /** This process's memory of full windows (tests give their own). */
  exhausted?: Map<string, number>;
}

/**
 * A per-key limit that holds across every process: a fixed one-minute window per API key,
 * counted in the table (see shared/domain/rate-limit/window.ts for why a fixed window). By
 * default each process claims slices of a key's minute with one conditional UpdateItem each and
 * spends them in memory (shared/domain/rate-limit/leases.ts), claiming the next slice in the
 * background before it runs out; `mode: 'request'` counts each request with its own write.
 * Every answer carries X-RateLimit-Limit/Remaining/Reset; a 429 adds Retry-After (seconds to the
 * window end). When the counter fails or is slow the request is served uncounted (fail open) and
 * a warning is logged: the limit protects the platform, it must never be why a call fails.
 */
export function rateLimit(options: RateLimitOptions = {}): HttpMiddleware {
  const now = options.now ?? Date.now;
  const count = options.count ?? countRequest;
  const exhausted = options.exhausted ?? shared;
  let ownBook: LeaseBook | undefined;
  const book = () => {
    if (options.leases) return options.leases;
    if (options.claim) return (ownBook ??= newBook(options.claim, options.timeoutMs));
    return (sharedBook ??= newBook(claimLease));
  };
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

      const timeoutMs = options.timeoutMs ?? config().rateLimitTimeoutMs;
      const mode = options.mode ?? config().rateLimitMode;
      let decision: RateDecision;
      try {
        if (mode === 'lease') {
          decision = await book().take(caller.keyId, limit, t, (p) => within(p, timeoutMs));
        } else {
          const abort = new AbortController();
          const counted = await within(
            count({ keyId: caller.keyId, window: window.index, limit, expiresAt: counterExpiry(window), signal: abort.signal }),
            timeoutMs,
            abort,
          );
          decision = decide(counted, limit, window, t);
        }
      } catch (err) {
        logger.warn('rate limit not applied: the counter failed, request served uncounted', { key_id: caller.keyId, error: (err as Error).message });
        return;
      }
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

/**
 * The table's lease claims, each aborted after ten times the request's bound: a request stops
 * waiting at the bound (and is served uncounted), but a slow claim may still land for the next ones.
 */
function newBook(claim: (request: LeaseRequest) => Promise<Lease>, timeoutMs?: number): LeaseBook {
  return new LeaseBook(
    (c) => {
      const bound = 10 * (timeoutMs ?? config().rateLimitTimeoutMs);
      const abort = new AbortController();
      return within(claim({ ...c, signal: abort.signal }), bound, abort);
    },
    (err, keyId) => logger.warn('rate limit lease not claimed in the background; the next request will claim', { key_id: keyId, error: err.message }),
  );
}

/** The promise, or a rejection after `ms` (aborting `abort`, so the SDK call ends too). */
async function within<T>(promise: Promise<T>, ms: number, abort?: AbortController): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`rate-limit counter took over ${ms} ms`);
      abort?.abort(err);
      reject(err);
    }, ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

function refuse(headers: Record<string, string>, resetSeconds: number): never {
  headers['x-ratelimit-remaining'] = '0';
  headers['x-ratelimit-reset'] = String(resetSeconds);
  throw new RateLimitedError(resetSeconds);
}

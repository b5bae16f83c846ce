import { RateLimitedError } from '../../errors';
import { httpState } from '../context';
import { config } from '../../config';
import type { HttpMiddleware } from './types';

type Bucket = { tokens: number; updatedAt: number };

/**
 * A token bucket per API key, held in this process: `limit` requests per minute with bursts
 * up to `limit`. Every answer carries X-RateLimit-Limit/Remaining; a 429 adds Retry-After.
 * Deployed, API Gateway's stage throttling bounds the total across processes.
 */
const shared = new Map<string, Bucket>();

export function rateLimit(options: { now?: () => number; defaultPerMinute?: number; buckets?: Map<string, Bucket> } = {}): HttpMiddleware {
  // One set of buckets per process, so every operation served here draws on the same allowance.
  const buckets = options.buckets ?? shared;
  const now = options.now ?? Date.now;
  return {
    name: 'rate-limit',
    before: (request) => {
      const state = httpState(request);
      const caller = state.caller;
      if (!caller) return;
      const limit = caller.rateLimitPerMinute ?? options.defaultPerMinute ?? config().rateLimitPerMinute;
      if (!limit) return;
      const perMs = limit / 60_000;
      const t = now();
      const bucket = buckets.get(caller.keyId) ?? { tokens: limit, updatedAt: t };
      bucket.tokens = Math.min(limit, bucket.tokens + (t - bucket.updatedAt) * perMs);
      bucket.updatedAt = t;
      if (buckets.size > 50_000) buckets.clear();
      buckets.set(caller.keyId, bucket);
      state.responseHeaders['x-ratelimit-limit'] = String(limit);
      if (bucket.tokens < 1) {
        state.responseHeaders['x-ratelimit-remaining'] = '0';
        throw new RateLimitedError(Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000)));
      }
      bucket.tokens -= 1;
      state.responseHeaders['x-ratelimit-remaining'] = String(Math.floor(bucket.tokens));
    },
  };
}

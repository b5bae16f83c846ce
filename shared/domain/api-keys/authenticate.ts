import { getItem } from '../../db/store';
import { keys } from '../../db/keys';
import { config } from '../../config';
import { hashApiKey, looksLikeApiKey } from './secret';
import { queue } from '../../adapters/queue';
import { logger } from '../../logger';

/** The caller as established by API-key authentication. */
export interface Caller {
  organizationId: string;
  keyId: string;
  rateLimitPerMinute?: number;
}

/** The queue of last-used stamps (see shared/jobs/registry.ts). */
export const API_KEY_USAGE_QUEUE = 'api-key-usage';

/** The item authentication reads: one GetItem by the key's hash. */
export interface KeyHashItem {
  pk: string;
  sk: string;
  organization_id: string;
  key_id: string;
  expires_at?: string;
  rate_limit_per_minute?: number;
}

type Entry = { caller: Caller | null; expiresAt: number; validUntil?: number };
const cache = new Map<string, Entry>();
const MAX_ENTRIES = 10_000;

/**
 * Resolves an API key to its organization, or null. Answers (found or not) are cached for
 * API_KEY_CACHE_SECONDS, so a hot key costs no read; revocation in this process forgets the
 * entry at once, other processes within that bound.
 */
export async function authenticate(apiKey: string, now = Date.now()): Promise<Caller | null> {
  if (!looksLikeApiKey(apiKey)) return null;
  const hash = hashApiKey(apiKey);
  const hit = cache.get(hash);
  if (hit && hit.expiresAt > now) {
    if (hit.validUntil !== undefined && hit.validUntil <= now) return null;
    return hit.caller;
  }
  const item = await getItem<KeyHashItem>(keys.apiKeyByHash(hash), false);
  const validUntil = item?.expires_at ? Date.parse(item.expires_at) : undefined;
  const caller: Caller | null = item
    ? { organizationId: item.organization_id, keyId: item.key_id, rateLimitPerMinute: item.rate_limit_per_minute }
    : null;
  if (caller) reportUse(caller, now);
  if (cache.size >= MAX_ENTRIES) cache.clear();
  cache.set(hash, { caller, expiresAt: now + config().apiKeyCacheSeconds * 1000, validUntil });
  if (validUntil !== undefined && validUntil <= now) return null;
  return caller;
}

/** Stamps sent and not yet settled; the auth middleware waits for them before the response returns. */
const pending = new Set<Promise<void>>();
/** When each key's stamp was last sent from this process. */
const lastSent = new Map<string, number>();
/** A key's stamp is sent at most this often per process: `last_used_at` is precise to about a minute. */
export const USAGE_STAMP_INTERVAL_MS = 60_000;
/** The longest the end of a request waits for a stamp's send before giving up on it (logged). */
export const USAGE_FLUSH_TIMEOUT_MS = 200;

/**
 * Queues a last-used stamp, at most once per key per minute per process. The send starts now and
 * runs alongside the request; `flushApiKeyUsage` awaits it before the response returns, so it
 * is not left half-done when Lambda freezes the process after the invocation.
 */
function reportUse(caller: Caller, now: number): void {
  const last = lastSent.get(caller.keyId);
  if (last !== undefined && now - last < USAGE_STAMP_INTERVAL_MS) return;
  if (lastSent.size >= MAX_ENTRIES) lastSent.clear();
  lastSent.set(caller.keyId, now);
  const send = queue()
    .send(API_KEY_USAGE_QUEUE, { organization_id: caller.organizationId, key_id: caller.keyId, used_at: new Date(now).toISOString() })
    .catch((err) => {
      lastSent.delete(caller.keyId); // try again on the next request
      logger.warn('could not queue api key usage', { error: (err as Error).message });
    })
    .finally(() => pending.delete(send));
  pending.add(send);
}

/**
 * Waits (at most `timeoutMs`) for the stamps this process has in flight. Resolves at once when
 * none is, which is every request that found its key in the cache; never rejects.
 */
export function flushApiKeyUsage(timeoutMs = USAGE_FLUSH_TIMEOUT_MS): Promise<void> | undefined {
  if (!pending.size) return undefined;
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      logger.warn('api key usage stamp still sending when the response was ready; not waiting longer', { timeout_ms: timeoutMs });
      resolve();
    }, timeoutMs);
  });
  return Promise.race([Promise.all(pending).then(() => undefined), bound]).finally(() => clearTimeout(timer));
}

/** Drops a key from this process's cache (called when it is revoked). */
export function forgetApiKey(hash: string): void {
  cache.delete(hash);
}

/** Empties the cache (tests). */
export function clearApiKeyCache(): void {
  cache.clear();
  lastSent.clear();
}

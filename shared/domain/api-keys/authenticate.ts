import { getItem } from '../../db/store';
import { keys } from '../../db/keys';
import { config } from '../../config';
import { hashApiKey, looksLikeApiKey } from './secret';
import type { Caller } from '../../http/context';
import { queue } from '../../adapters/queue';
import { logger } from '../../logger';

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

/** Queues a last-used stamp; at most once per cache period per key and process, off the request path. */
function reportUse(caller: Caller, now: number): void {
  queue()
    .send(API_KEY_USAGE_QUEUE, { organization_id: caller.organizationId, key_id: caller.keyId, used_at: new Date(now).toISOString() })
    .catch((err) => logger.warn('could not queue api key usage', { error: (err as Error).message }));
}

/** Drops a key from this process's cache (called when it is revoked). */
export function forgetApiKey(hash: string): void {
  cache.delete(hash);
}

/** Empties the cache (tests). */
export function clearApiKeyCache(): void {
  cache.clear();
}

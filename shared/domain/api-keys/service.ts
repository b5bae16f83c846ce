import { listCollection } from '../common/collection';
import { v7 as uuidv7 } from 'uuid';
import { collections, keys, Prefix } from '../../db/keys';
import { deleteExisting, getItem, putNew, stripKeys, transact, updateExisting, ConditionFailed, type PageRequest } from '../../db/store';
import { NotFoundError, ValidationError } from '../../errors';
import { forgetApiKey } from './authenticate';
import { generateApiKey, hashApiKey, keyPrefix } from './secret';
import { getOrganization } from '../organizations/service';

interface ApiKeyRecord {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  expires_at?: string;
  last_used_at?: string;
  hash: string;
}

function view(record: ApiKeyRecord) {
  const { hash, ...rest } = stripKeys(record as unknown as Record<string, unknown>) as unknown as ApiKeyRecord;
  void hash;
  return rest;
}

/**
 * Stores a key for an organization: its record (name, prefix, dates) and the lookup item by
 * hash, in one transaction with the key counter. The secret itself is never stored.
 */
export async function storeApiKey(orgId: string, apiKey: string, input: { name: string; expires_at?: string }) {
  const org = await getOrganization(orgId);
  if (!org) throw new NotFoundError('Organization', orgId);
  const record: ApiKeyRecord = {
    id: uuidv7(),
    name: input.name,
    prefix: keyPrefix(apiKey)!,
    created_at: new Date().toISOString(),
    ...(input.expires_at ? { expires_at: new Date(input.expires_at).toISOString() } : {}),
    hash: hashApiKey(apiKey),
  };
  await transact(
    [
      putNew({ ...keys.apiKey(orgId, record.id), entity: 'api-key', ...record }),
      putNew({
        ...keys.apiKeyByHash(record.hash),
        entity: 'api-key-hash',
        organization_id: orgId,
        key_id: record.id,
        ...(record.expires_at ? { expires_at: record.expires_at } : {}),
        ...(org.rate_limit_per_minute ? { rate_limit_per_minute: org.rate_limit_per_minute } : {}),
      }),
    ],
    [{ orgId, collection: collections.apiKeys, delta: 1 }],
  );
  return view(record);
}

/** Issues a new key; the answer is the only place the key is ever shown. */
export async function issueApiKey(orgId: string, input: { name: string; expires_at?: string }) {
  if (input.expires_at && Date.parse(input.expires_at) <= Date.now()) {
    throw ValidationError.field('expires_at', 'must be in the future');
  }
  const apiKey = generateApiKey();
  const stored = await storeApiKey(orgId, apiKey, input);
  return { ...stored, key: apiKey };
}

export function listApiKeys(orgId: string, page: PageRequest) {
  return listCollection(orgId, Prefix.apiKey, collections.apiKeys, page, view);
}

/** Revokes a key (the caller's own included: this request completes, the next one is refused). */
export async function revokeApiKey(orgId: string, keyId: string) {
  const record = await getItem<ApiKeyRecord>(keys.apiKey(orgId, keyId));
  if (!record) throw new NotFoundError('API key', keyId);
  try {
    await transact([deleteExisting(keys.apiKey(orgId, keyId)), deleteExisting(keys.apiKeyByHash(record.hash))], [
      { orgId, collection: collections.apiKeys, delta: -1 },
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new NotFoundError('API key', keyId);
    throw err;
  }
  forgetApiKey(record.hash);
}

/** Records a key's last use (the api-key-usage job); only moves forward, and never resurrects a revoked key. */
export async function recordApiKeyUse(orgId: string, keyId: string, usedAt: string): Promise<void> {
  try {
    await transact([
      updateExisting(keys.apiKey(orgId, keyId), { last_used_at: usedAt }, {
        condition: '(attribute_not_exists(last_used_at) OR last_used_at < :t)',
        values: { ':t': usedAt },
      }),
    ]);
  } catch (err) {
    // An older stamp, or a key revoked meanwhile: nothing to record.
    if (!(err instanceof ConditionFailed)) throw err;
  }
}

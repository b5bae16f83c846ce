import { getItem } from '../../db/store';
import { keys } from '../../db/keys';
import { ValidationError } from '../../errors';
import { createOrganization } from '../organizations/service';
import { apiKeyProblem, generateApiKey, hashApiKey } from './secret';
import { storeApiKey } from './service';
import type { KeyHashItem } from './authenticate';

export { generateApiKey };

/**
 * Makes sure a given key works: when it is not provisioned yet, creates an organization of
 * its own and stores the key there. Idempotent, so the local runtime can run it on every start.
 */
export async function ensureOrganizationKey(input: { key: string; name: string; rateLimitPerMinute?: number }): Promise<{ organizationId: string; created: boolean }> {
  const problem = apiKeyProblem(input.key);
  if (problem) throw new ValidationError(`The API key ${problem}`);
  const existing = await getItem<KeyHashItem>(keys.apiKeyByHash(hashApiKey(input.key)));
  if (existing) return { organizationId: existing.organization_id, created: false };
  const org = await createOrganization({ name: input.name, rateLimitPerMinute: input.rateLimitPerMinute });
  await storeApiKey(org.id, input.key, { name: `${input.name} key` });
  return { organizationId: org.id, created: true };
}

/** Creates an organization with its first key (the admin command). */
export async function createOrganizationWithKey(input: { name: string; rateLimitPerMinute?: number }) {
  const org = await createOrganization(input);
  const key = generateApiKey();
  const stored = await storeApiKey(org.id, key, { name: 'first key' });
  return { organization: org, key, keyId: stored.id };
}

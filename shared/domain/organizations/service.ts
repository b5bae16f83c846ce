import { v7 as uuidv7 } from 'uuid';
import { keys } from '../../db/keys';
import { putNew, queryAll, getItem, transact } from '../../db/store';

export interface Organization {
  id: string;
  name: string;
  rate_limit_per_minute?: number;
  created_at: string;
}

/** Creates an organization (and its directory entry for the admin listing). */
export async function createOrganization(input: { name: string; rateLimitPerMinute?: number; id?: string }): Promise<Organization> {
  const org: Organization = {
    id: input.id ?? uuidv7(),
    name: input.name,
    ...(input.rateLimitPerMinute ? { rate_limit_per_minute: input.rateLimitPerMinute } : {}),
    created_at: new Date().toISOString(),
  };
  await transact([
    putNew({ ...keys.organization(org.id), entity: 'organization', ...org }),
    putNew({ ...keys.organizationDirectory(org.id), entity: 'organization-directory', ...org }),
  ]);
  return org;
}

export async function getOrganization(id: string): Promise<Organization | undefined> {
  const item = await getItem<Organization & Record<string, unknown>>(keys.organization(id));
  if (!item) return undefined;
  return { id: item.id, name: item.name, rate_limit_per_minute: item.rate_limit_per_minute, created_at: item.created_at };
}

/** Every organization (admin command only; reads the directory partition). */
export async function listOrganizations(): Promise<Organization[]> {
  const out: Organization[] = [];
  for await (const item of queryAll<Organization & Record<string, unknown>>({ pkName: 'pk', pkValue: keys.directoryPartition })) {
    out.push({ id: item.id, name: item.name, rate_limit_per_minute: item.rate_limit_per_minute, created_at: item.created_at });
  }
  return out;
}

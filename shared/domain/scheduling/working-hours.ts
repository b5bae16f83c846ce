import { keys } from '../../db/keys';
import { ConditionFailed, deleteExisting, getItem, stripKeys, transact } from '../../db/store';
import { putItem } from '../../db/filtered-query';
import { NotFoundError } from '../../errors';
import type { WorkingHours as Hours } from './buckets';
import type { WorkingHoursInput } from './schemas';

type Item = Hours & { agent_id: string; updated_at: string };

/** The agent must exist in the organization (404 on the path's agent otherwise). */
async function requireAgent(orgId: string, agentId: string) {
  if (!(await getItem(keys.agent(orgId, agentId)))) throw new NotFoundError('Agent', agentId);
}

/** Sets an agent's working hours (days, start, end, IANA time zone); replaces earlier ones. */
export async function putWorkingHours(orgId: string, agentId: string, input: WorkingHoursInput) {
  await requireAgent(orgId, agentId);
  const item: Item = { agent_id: agentId, days: [...new Set(input.days.map((d) => d % 7))].sort(), start: input.start, end: input.end, timezone: input.timezone, updated_at: new Date().toISOString() };
  await transact([putItem({ ...keys.workingHours(orgId, agentId), entity: 'WORKING_HOURS', ...item })]);
  return { configured: true, ...item };
}

export async function getWorkingHours(orgId: string, agentId: string) {
  await requireAgent(orgId, agentId);
  const item = await findWorkingHours(orgId, agentId);
  return item ? { configured: true, ...item } : { agent_id: agentId, configured: false };
}

export async function deleteWorkingHours(orgId: string, agentId: string): Promise<void> {
  try {
    await transact([deleteExisting(keys.workingHours(orgId, agentId))]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new NotFoundError('Working hours of agent', agentId);
    throw err;
  }
}

/** The agent's working hours, or undefined when it is bookable at any time. */
export async function findWorkingHours(orgId: string, agentId: string): Promise<Item | undefined> {
  const item = await getItem<Record<string, unknown>>(keys.workingHours(orgId, agentId));
  return item ? (stripKeys(item) as unknown as Item) : undefined;
}

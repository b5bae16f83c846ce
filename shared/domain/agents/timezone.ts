import { findWorkingHours } from '../scheduling/working-hours';

/** The time zone of the agent's working hours, or undefined when it has none (one GetItem). */
export async function agentWorkingHoursZone(orgId: string, agentId: string): Promise<string | undefined> {
  return (await findWorkingHours(orgId, agentId))?.timezone || undefined;
}

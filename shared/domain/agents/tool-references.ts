import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { keys, Prefix } from '../../db/keys';
import { ConditionFailed, getItem, queryAll, transact, updateExisting } from '../../db/store';
import { ConflictError } from '../../errors';

/** The lists of an agent that point to other resources, which their deletion cleans. */
type ListMember = 'selected_tools' | 'handoff_agents';
type AgentList = { id: string } & Partial<Record<ListMember, Record<string, unknown>[]>>;

/**
 * Removes the items `drop` matches from `member` of every agent of the organization and returns
 * how many agents changed. Pages through the organization's agents (a partition query reading only
 * id and the list, never a Scan); each rewrite is conditioned on the list as read, so a list changed
 * meanwhile is read again and retried, never clobbered. `stuck` answers an agent that kept changing.
 */
export async function removeFromAgentLists(orgId: string, member: ListMember, drop: (item: Record<string, unknown>) => boolean, stuck: (agentId: string) => void): Promise<number> {
  let changed = 0;
  const agents = queryAll<AgentList>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.agent }, ['id', member], true);
  for await (const agent of agents) {
    if ((agent[member] ?? []).some(drop) && (await removeFromAgent(orgId, agent, member, drop, stuck))) changed++;
  }
  return changed;
}

async function removeFromAgent(orgId: string, listed: AgentList, member: ListMember, drop: (item: Record<string, unknown>) => boolean, stuck: (agentId: string) => void): Promise<boolean> {
  const key = keys.agent(orgId, listed.id);
  let agent: AgentList | undefined = listed;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const list = agent?.[member] ?? [];
    const kept = list.filter((item) => !drop(item));
    // Deleted meanwhile, or no longer listing it: nothing to do.
    if (!agent || kept.length === list.length) return false;
    try {
      await transact([updateExisting(key, { [member]: kept, updated_at: new Date().toISOString() }, { condition: '#list = :list', names: { '#list': member }, values: { ':list': list } })]);
      return true;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
      agent = await getItem<AgentList>(key);
    }
  }
  // Practically unreachable (25 lost races in a row).
  stuck(listed.id);
  return false;
}

/** Removes a (deleted) tool from `selected_tools` of every agent of the organization; returns how many agents changed. */
export async function removeToolFromAgents(orgId: string, toolId: string): Promise<number> {
  return removeFromAgentLists(orgId, 'selected_tools', (t) => t.tool_id === toolId, (agentId) => {
    // The message tells the caller what is left to do.
    throw new ConflictError(`Tool ${toolId} was deleted, but agent ${agentId} kept changing; remove the tool from its selected_tools`, { agent_id: agentId, tool_id: toolId });
  });
}

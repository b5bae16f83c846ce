import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { keys, Prefix } from '../../db/keys';
import { ConditionFailed, getItem, queryAll, transact, updateExisting } from '../../db/store';
import { ConflictError } from '../../errors';

/** The part of an agent the cleanup reads. */
interface AgentTools {
  id: string;
  selected_tools?: { tool_id?: string; type?: string }[];
  version?: number;
}


/**
 * Removes a (deleted) tool from `selected_tools` of every agent of the organization and
 * returns how many agents changed. Pages through the organization's agents (a partition
 * query reading only id, tools and version, never a Scan); each rewrite is conditioned on
 * the version read, so an agent changed meanwhile is read again and retried, never clobbered.
 */
export async function removeToolFromAgents(orgId: string, toolId: string): Promise<number> {
  let changed = 0;
  const agents = queryAll<AgentTools>(
    { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.agent },
    ['id', 'selected_tools', 'version'],
    true,
  );
  for await (const agent of agents) {
    if (await removeFromAgent(orgId, agent, toolId)) changed++;
  }
  return changed;
}

async function removeFromAgent(orgId: string, listed: AgentTools, toolId: string): Promise<boolean> {
  const key = keys.agent(orgId, listed.id);
  let agent: AgentTools | undefined = listed;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const selected = agent?.selected_tools ?? [];
    const kept = selected.filter((t) => t.tool_id !== toolId);
    // Deleted meanwhile, or no longer selecting the tool: nothing to do.
    if (!agent || kept.length === selected.length) return false;
    const versionCondition =
      agent.version === undefined
        ? { condition: 'attribute_not_exists(#ver)', names: { '#ver': 'version' } }
        : { condition: '#ver = :ver', names: { '#ver': 'version' }, values: { ':ver': agent.version } };
    try {
      await transact([updateExisting(key, { selected_tools: kept, updated_at: new Date().toISOString() }, versionCondition)]);
      return true;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
      agent = await getItem<AgentTools>(key);
    }
  }
  // Practically unreachable (25 lost races in a row); the message tells the caller what is left to do.
  throw new ConflictError(`Tool ${toolId} was deleted, but agent ${listed.id} kept changing; remove the tool from its selected_tools`, {
    agent_id: listed.id,
    tool_id: toolId,
  });
}

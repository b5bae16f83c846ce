import { keys, Prefix } from '../../db/keys';
import { ConditionFailed, queryAll, transact, updateExisting } from '../../db/store';

/**
 * Clears `inbound_agent_id` on every number of the organization that points at a deleted agent.
 * A number write that sets an agent checks the agent exists in its own transaction, so once
 * the agent is gone no new reference can appear while this runs.
 */
export async function detachAgentFromNumbers(orgId: string, agentId: string): Promise<number> {
  let changed = 0;
  const numbers = queryAll<{ id: string; inbound_agent_id: string | null }>(
    { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.phoneNumber },
    ['id', 'inbound_agent_id'],
    true,
  );
  for await (const n of numbers) {
    if (n.inbound_agent_id !== agentId) continue;
    try {
      await transact([
        updateExisting(keys.phoneNumber(orgId, n.id), { inbound_agent_id: null, updated_at: new Date().toISOString() }, {
          condition: 'inbound_agent_id = :agent',
          values: { ':agent': agentId },
        }),
      ]);
      changed++;
    } catch (err) {
      // Pointed elsewhere meanwhile: nothing to clear.
      if (!(err instanceof ConditionFailed)) throw err;
    }
  }
  return changed;
}

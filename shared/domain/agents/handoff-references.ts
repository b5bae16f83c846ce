import { logger } from '../../logger';
import { removeFromAgentLists } from './tool-references';

/**
 * Removes a deleted agent from the `handoff_agents` of every agent of the organization (the
 * agent-cleanup job's last step; tool-references.ts pages and conditions the rewrites). Published
 * versions keep what they froze: a hand-off to the deleted agent from one of them is refused to the
 * model at run time.
 */
export async function removeAgentFromHandoffs(orgId: string, agentId: string): Promise<number> {
  return removeFromAgentLists(orgId, 'handoff_agents', (h) => h.agent_id === agentId, (listing) => {
    logger.warn('A deleted agent stays in an agent\'s handoff_agents (it kept changing); a hand-off to it is refused at run time', { agent_id: listing, deleted_agent_id: agentId });
  });
}

import type { Agent, HandoffAgent } from '../agents/schemas';
import { HANDOFF_TOOL } from './engine';
import { toolsForAgent, type RunnableTool } from './tools/catalog';
import type { Channel } from './types';

/**
 * The `handoff_to_agent` tool and an agent's tools with it: what every turn needs of hand-offs.
 * The rules of a hand-off itself (handoff.ts) load only for an agent that lists hand-off agents.
 */

/** The part of an agent the hand-off rules read. */
export type HandoffAgentFields = Pick<Agent, 'id'> & { handoff_agents?: HandoffAgent[] | null };

/** The `handoff_to_agent` tool for an agent that lists hand-off agents, else undefined. */
export function handoffTool(agent: HandoffAgentFields): RunnableTool | undefined {
  const entries = agent.handoff_agents ?? [];
  if (!entries.length) return undefined;
  const listed = entries.map((e) => `- ${e.agent_id}: ${e.description}`).join('\n');
  return {
    kind: 'builtin',
    name: HANDOFF_TOOL,
    description: `Hand the conversation to another agent, who continues it with the whole history from your next step on. Tell the user first. The agents you may hand off to:\n${listed}`,
    parameters: {
      type: 'object',
      properties: {
        agent_id: { type: 'string', enum: entries.map((e) => e.agent_id), description: 'The agent to hand the conversation to (one of the listed ids)' },
        reason: { type: 'string', description: 'Why the conversation is handed off (optional; the next agent and the records see it)' },
      },
      required: ['agent_id'],
    },
    selection: { type: HANDOFF_TOOL },
  };
}

/** An agent's tools on a channel (its `selected_tools`, catalog.ts) and its `handoff_to_agent` when it lists agents. */
export async function agentTools(orgId: string, agent: Agent, channel: Channel): Promise<RunnableTool[]> {
  const tools = await toolsForAgent(orgId, (agent.selected_tools ?? []) as Record<string, unknown>[], channel);
  return withHandoffTool(tools, agent);
}

/** `tools` with the agent's `handoff_to_agent` added (when it lists agents and no tool has the name). */
export function withHandoffTool(tools: RunnableTool[], agent: HandoffAgentFields): RunnableTool[] {
  const tool = handoffTool(agent);
  return tool && !tools.some((t) => t.name === HANDOFF_TOOL) ? [...tools, tool] : tools;
}

import type { Agent } from '../shared/domain/agents/schemas';
import { agentTools, handoffSetup, planHandoff } from '../shared/domain/conversations/handoff';
import type { Segment } from '../shared/domain/conversations/segments';
import type { RunnableTool } from '../shared/domain/conversations/tools/catalog';
import { knowledgeBaseExists } from '../shared/domain/rag/service';
import type { CallContext } from './call-context';

/**
 * Agent-to-agent hand-off on a Realtime call (docs/api.md, "Hand-offs" → "On calls"). The rules
 * are the platform's (conversations/handoff.ts: who may take the call, loops, the cap, the
 * version); this is what a call switches to: the target's prompt filled with its own variables
 * over the call's contact and dynamic variables, its tools for calls (its own `handoff_to_agent`
 * among them when it lists agents), its knowledge base for the call's search tool, and its voice
 * where the session still allows it. The session (session.ts) applies it: `session.update`, the
 * call's segments and the `conversation.handed_off` event.
 *
 * What stays the first agent's for the whole call, and why: the speech model (`s2s_model`: a
 * Realtime session cannot change model), the voice once the model has spoken (the Realtime API
 * refuses a voice change once the session holds assistant audio), and what the call was set up
 * with when it was answered: the maximum duration, silence reminders, ambient sound, voicemail
 * handling and ring time of transfers.
 */
export interface CallSwitch {
  agent: Agent;
  agentVersion: number | null;
  /** The target's filled prompt. */
  instructions: string;
  tools: RunnableTool[];
  knowledgeBaseId: string | null;
  timezone: string;
  segment: Segment;
  from: { agent_id: string; agent_version: number | null };
}

/** Decides and builds a hand-off of the call to `targetId`: the switch, or `{ refused }` (the text the model hears). */
export async function callHandoff(ctx: CallContext, targetId: string, reason: string | null): Promise<CallSwitch | { refused: string }> {
  const orgId = ctx.call.organization_id;
  const plan = await planHandoff({ organization_id: orgId, agent: ctx.agent, segments: ctx.segments }, targetId, reason);
  if ('refused' in plan) return plan;
  const setup = handoffSetup(plan.agent, { contact: ctx.contact, dynamicVariables: ctx.call.dynamic_variables ?? {}, timezone: ctx.conversation.timezone });
  const [tools, kbExists] = await Promise.all([
    agentTools(orgId, plan.agent, 'call'),
    plan.agent.knowledge_base ? knowledgeBaseExists(orgId, plan.agent.knowledge_base) : Promise.resolve(false),
  ]);
  return {
    agent: plan.agent,
    agentVersion: plan.agent_version,
    instructions: setup.system,
    tools,
    knowledgeBaseId: kbExists ? plan.agent.knowledge_base : null,
    timezone: setup.timezone,
    segment: plan.segment,
    from: { agent_id: ctx.agent.id, agent_version: ctx.agentVersion },
  };
}

/** The call's context from the switch on: the target agent runs the conversation (its segment added to the chain). */
export function applySwitch(ctx: CallContext, sw: CallSwitch): void {
  ctx.agent = sw.agent;
  ctx.agentVersion = sw.agentVersion;
  ctx.instructions = sw.instructions;
  ctx.knowledgeBaseId = sw.knowledgeBaseId;
  ctx.conversation = { ...ctx.conversation, agent_id: sw.agent.id, timezone: sw.timezone };
  ctx.segments = [...ctx.segments, sw.segment];
}

import type { LlmPassage } from '../../adapters/llm/port';
import { clockNow } from '../../clock';
import type { Agent, HandoffAgent } from '../agents/schemas';
import { effectiveModel } from '../agents/models';
import { agentAtVersion } from '../agents/versions';
import { newEvent } from '../events/publish';
import { HANDOFF_TOOL, type HandoffHook, type HandoffSwitch } from './engine';
import { handledAgentIds, type Segment } from './segments';
import type { RunnableTool } from './tools/catalog';
import { agentTools, type HandoffAgentFields } from './handoff-tool';
import type { Channel, ConversationRef } from './types';
import { conversationSetup, type ConversationSetup, type ConversationSetupInput } from './variables';

/**
 * Agent-to-agent hand-off (operations.md, "Agent-to-agent hand-off"; docs/api.md, "Hand-offs"):
 * the rules, in one place for every channel (chats, the widget, the OpenAI-compatible endpoint,
 * agent tests, simulated calls, the relay, and the Realtime runtime).
 *
 * An agent with `handoff_agents` is offered the built-in `handoff_to_agent` (`handoffTool`: its
 * `agent_id` argument an enum of the listed agents, the description each one's). Running it:
 *
 * 1. `planHandoff(current, segments, targetId, reason)` decides. Refused (the model hears the
 *    reason as the tool's error, the conversation goes on with the current agent) when the target is
 *    not listed by the current agent; when the conversation was already handed off MAX_HANDOFFS
 *    times; when the target is deleted or inactive; when the target is already in the chain (it is
 *    "already handling" / "already handled" the conversation) unless the target's own
 *    `handoff_agents` lists the current agent (a hand-back that agent allows). Else it resolves the
 *    target's version (the entry's `agent_version`, else the target's published version, else its
 *    draft, read now) and opens the new segment.
 * 2. `handoffParts(plan, …)` builds what the agent handed to runs with: its filled prompt (its own
 *    built-ins such as `agent_name`, the conversation's contact, visitor and dynamic variables),
 *    its tools for the channel (with its own `handoff_to_agent` when it lists agents), its model and
 *    temperature, and its knowledge base's passages for the words being answered.
 *
 * Channels that run the engine use `handoffSession`, which does both behind the engine's
 * `TurnInput.handoff` hook and keeps the chain; the engine swaps prompt, tools and model for the
 * turn's following requests and reports the switches in `TurnOutput.handoffs`; the channel then
 * stores `session.segments` and writes `handoffEvent` (in the same transaction as the turn where
 * it can).
 *
 * For the Realtime runtime (voice/, which does not run the engine's loop), the same two steps:
 *
 *   const plan = await planHandoff({ organization_id, agent, segments }, args.agent_id, args.reason ?? null);
 *   if ('refused' in plan) → answer the function call with { error: plan.refused };
 *   else → const setup = handoffSetup(plan.agent, { contact, dynamicVariables, timezone, … });
 *          const tools = await agentTools(orgId, plan.agent, 'call');
 *          session.update with setup.system and tools; segments.push(plan.segment);
 *          record the call's segments and the event: calls/handoffs.ts `recordCallHandoff`.
 *   (The voice can change on a Realtime session only before the model's first audio: see docs.)
 */

/** At most this many hand-offs per conversation. */
export const MAX_HANDOFFS = 5;
export { HANDOFF_TOOL };
// The tool itself is all a conversation without hand-off agents needs: a module of its own, so the
// turn functions load these rules only for an agent that lists agents (handoff-tool.ts).
export { agentTools, handoffTool, withHandoffTool, type HandoffAgentFields } from './handoff-tool';

/** A hand-off decided: the agent handed to (at the version it runs) and the segment it opens. */
export interface HandoffPlan {
  agent: Agent;
  agent_version: number | null;
  segment: Segment;
}

/** The agent a hand-off names, at the version it runs; undefined when it is gone or inactive. */
async function targetAgent(orgId: string, entry: HandoffAgent): Promise<{ agent: Agent; agent_version: number | null } | undefined> {
  // The organization's own partition: another organization's id reads nothing (and was refused on write).
  // The agents service loads at a hand-off, not with every chat function.
  const draft = await (await import('../agents/service')).findAgent(orgId, entry.agent_id);
  if (!draft || draft.status === 'AGENT_STATUS_INACTIVE') return undefined;
  const version = entry.agent_version ?? draft.published_version ?? null;
  if (version === null) return { agent: draft, agent_version: null };
  const frozen = await agentAtVersion(orgId, entry.agent_id, version);
  if (!frozen) return undefined;
  return { agent: { ...frozen, name: draft.name, status: draft.status }, agent_version: version };
}

/**
 * Decides a `handoff_to_agent` call (see the module comment): the plan, or `{ refused }` with the
 * text the model hears. `segments` is the chain so far (the current agent's segment last).
 */
export async function planHandoff(
  current: { organization_id: string; agent: HandoffAgentFields; segments: Segment[] },
  targetId: string,
  reason: string | null,
  now: Date = clockNow(),
): Promise<HandoffPlan | { refused: string }> {
  const entries = current.agent.handoff_agents ?? [];
  const entry = entries.find((e) => e.agent_id === targetId);
  if (!entry) return { refused: `"${targetId}" is not one of the agents you may hand off to (${entries.map((e) => e.agent_id).join(', ') || 'none'})` };
  if (current.segments.length - 1 >= MAX_HANDOFFS) return { refused: `this conversation was already handed off ${MAX_HANDOFFS} times, the most it may be: go on with it yourself` };
  if (targetId === current.agent.id) return { refused: `agent ${targetId} is already handling this conversation (it is you)` };
  const target = await targetAgent(current.organization_id, entry);
  if (!target) return { refused: `agent ${targetId} cannot take the conversation now (it was deleted or is inactive): go on with it yourself` };
  if (handledAgentIds(current.segments).includes(targetId) && !(target.agent.handoff_agents ?? []).some((e) => e.agent_id === current.agent.id)) {
    return { refused: `agent ${targetId} already handled this conversation earlier and does not take it back from you (a hand-off back needs that agent to list you in its handoff_agents): go on with it yourself` };
  }
  return { ...target, segment: { agent_id: targetId, agent_version: target.agent_version, started_at: now.toISOString(), reason } };
}

/** The agent handed to's variables, filled prompt and opening in the conversation (variables.ts: the same inputs, its own agent). */
export function handoffSetup(agent: Agent, input: Omit<ConversationSetupInput, 'agent' | 'now'>, now: Date = clockNow()): ConversationSetup {
  return conversationSetup({ ...input, agent, beginMessage: null, now });
}

/** What the engine's hook needs from the channel. */
export interface HandoffContext {
  organization_id: string;
  channel: Channel;
  /** The agent running now, as it runs (a version's fields when pinned), and its version (null: the draft). */
  agent: Agent;
  agent_version: number | null;
  /** The chain so far (segmentsOf the conversation); the session keeps its own copy. */
  segments: Segment[];
  /** The conversation as the current agent's tools see it; a switch makes the target's (its agent_id). */
  conversation: ConversationRef;
  /** The conversation's setup inputs but the agent (contact values, visitor and dynamic variables, zone); a function is called at a hand-off only (the relay reads the contact then). */
  setup: Omit<ConversationSetupInput, 'agent' | 'now'> | (() => Promise<Omit<ConversationSetupInput, 'agent' | 'now'>>);
  /** The words the agent handed to answers (or a function giving the turn's): its knowledge base is ranked against them. */
  groundOn: string | (() => string);
  /** The tools of the agent handed to (default `agentTools` on the channel); agent tests and the OpenAI endpoint pass their own. */
  toolsFor?: (agent: Agent) => Promise<RunnableTool[]>;
  /** The model and temperature of the agent handed to (default its own). */
  modelFor?: (agent: Agent) => { model: string; temperature: number };
  /** The system text from the agent's filled prompt (the OpenAI endpoint appends the caller's trusted text). */
  systemFor?: (prompt: string) => string;
  /** Ranks the agent's knowledge base (default groundingPassages, loaded on first use). */
  passagesFor?: (agent: Agent, text: string) => Promise<LlmPassage[]>;
}

/** A hand-off session: the engine's hook and the chain as it stands (the current agent last). */
export interface HandoffSession {
  hook: HandoffHook;
  /** The agent handling the conversation now and its version. */
  readonly current: { agent: Agent; agent_version: number | null };
  /** Every segment, the ones this session opened included. */
  readonly segments: Segment[];
  /** True once this session made a hand-off. */
  readonly changed: boolean;
}

const defaultPassages = async (orgId: string, agent: Agent, text: string): Promise<LlmPassage[]> => {
  if (!agent.knowledge_base || !text) return [];
  const { groundingPassages } = await import('./grounding');
  return groundingPassages(orgId, agent.knowledge_base, text).catch(() => []);
};

/** The parts the agent handed to runs with (see the module comment). */
export async function handoffParts(ctx: HandoffContext, plan: HandoffPlan, now: Date = clockNow()): Promise<Omit<HandoffSwitch, 'result' | 'from' | 'segment'>> {
  const orgId = ctx.organization_id;
  const setup = handoffSetup(plan.agent, typeof ctx.setup === 'function' ? await ctx.setup() : ctx.setup, now);
  const groundOn = typeof ctx.groundOn === 'function' ? ctx.groundOn() : ctx.groundOn;
  const [tools, passages] = await Promise.all([
    ctx.toolsFor ? ctx.toolsFor(plan.agent) : agentTools(orgId, plan.agent, ctx.channel),
    ctx.passagesFor ? ctx.passagesFor(plan.agent, groundOn) : defaultPassages(orgId, plan.agent, groundOn),
  ]);
  const { model, temperature } = ctx.modelFor ? ctx.modelFor(plan.agent) : { model: effectiveModel(plan.agent), temperature: plan.agent.temperature };
  return {
    system: ctx.systemFor ? ctx.systemFor(setup.system) : setup.system,
    tools,
    model,
    temperature,
    passages,
    conversation: { ...ctx.conversation, agent_id: plan.agent.id, timezone: setup.timezone },
  };
}

/** The engine's hand-off hook for one conversation's turn (or a whole simulated conversation), keeping the chain. */
export function handoffSession(ctx: HandoffContext): HandoffSession {
  const segments = [...ctx.segments];
  let current = { agent: ctx.agent, agent_version: ctx.agent_version };
  let conversation = ctx.conversation;
  let changed = false;
  const hook: HandoffHook = async (targetId, reason) => {
    const now = clockNow();
    const plan = await planHandoff({ organization_id: ctx.organization_id, agent: current.agent, segments }, targetId, reason, now);
    if ('refused' in plan) return plan;
    const parts = await handoffParts({ ...ctx, conversation }, plan, now);
    const from = { agent_id: current.agent.id, agent_version: current.agent_version };
    segments.push(plan.segment);
    current = { agent: plan.agent, agent_version: plan.agent_version };
    conversation = parts.conversation;
    changed = true;
    return { ...parts, from, segment: plan.segment, result: { handed_off_to: plan.agent.id, agent_name: plan.agent.agent_name || plan.agent.name, reason } };
  };
  return {
    hook,
    get current() {
      return current;
    },
    segments,
    get changed() {
      return changed;
    },
  };
}

/** What a `conversation.handed_off` event says of its conversation. */
export interface HandedOffConversation {
  type: 'chat' | 'call';
  id: string;
  /** `api` / `widget` for chats, `phone` / `web` for calls. */
  channel: string;
  /** The agent the conversation started with (its `agent_id`) and its version. */
  agent_id: string;
  agent_version: number | null;
}

/** The `conversation.handed_off` event of one switch (its outbox write and the event), with the whole chain as it stood after it. */
export function handoffEvent(orgId: string, conversation: HandedOffConversation, sw: Pick<HandoffSwitch, 'from' | 'segment'>, segments: Segment[]) {
  const upTo = segments.slice(0, segments.indexOf(sw.segment) + 1 || segments.length);
  return newEvent(orgId, 'conversation.handed_off', {
    conversation: { ...conversation, current_agent_id: sw.segment.agent_id, current_agent_version: sw.segment.agent_version, segments: upTo },
    from: sw.from,
    to: { agent_id: sw.segment.agent_id, agent_version: sw.segment.agent_version },
    reason: sw.segment.reason,
    handed_off_at: sw.segment.started_at,
  });
}

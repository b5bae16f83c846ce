import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import type { Agent } from '../agents/schemas';
import type { Contact } from '../contacts/schemas';
import type { HandoffSwitch } from '../conversations/engine';
import type { HandoffSession } from '../conversations/handoff';
import { segmentsOf, type Segment } from '../conversations/segments';
import type { RelayState } from './state';

/**
 * Agent-to-agent hand-off on a ConversationRelay call (docs/api.md, "Agent-to-agent hand-off"):
 * the engine's hook for one turn (conversations/handoff.ts), and what a hand-off changes in the
 * connection's state, written with the turn: the agent's model, temperature, knowledge base and
 * tools, its filled prompt, the conversation its tools see, and the call's segments. What the
 * session's TwiML fixed stays the starting agent's: the voice and language (ConversationRelay takes
 * them per session; its `language` message switches only among languages, not voices), the
 * interruption and keypress settings, the maximum duration, and an IVR goal.
 */

/** The call's segments as the relay knows them (its state's, else the starting agent's). */
export function relaySegments(state: RelayState): Segment[] {
  return state.segments ?? segmentsOf({ agent_id: state.agent_id, agent_version: state.agent_version, created_at: new Date(state.started_ms).toISOString() });
}

/**
 * The turn's hand-off session, when the agent answering lists agents; `userText` grounds the agent
 * handed to. The hand-off rules (conversations/handoff.ts) load with the first such turn only.
 */
export async function relayHandoffSession(state: RelayState, userText: string): Promise<HandoffSession | undefined> {
  const entries = state.agent.handoff_agents ?? [];
  if (!entries.length) return undefined;
  const segments = relaySegments(state);
  const current = segments.at(-1)!;
  const { handoffSession } = await import('../conversations/handoff');
  return handoffSession({
    organization_id: state.organization_id,
    channel: 'call',
    // The rules read the current agent's id and list; the relay keeps only these of it.
    agent: { id: current.agent_id, handoff_agents: entries } as Agent,
    agent_version: current.agent_version,
    segments,
    conversation: state.conversation,
    // The contact is read at a hand-off only.
    setup: async () => ({
      contact: state.conversation.contact_id ? await getItem<Contact>(keys.contact(state.organization_id, state.conversation.contact_id)) : null,
      dynamicVariables: state.conversation.dynamic_variables,
      timezone: state.conversation.timezone,
    }),
    groundOn: userText,
  });
}

/** Records the turn's hand-offs on the call (segments, events) and answers the state's change for the agent handed to. */
export async function settleRelayHandoffs(state: RelayState, session: HandoffSession, handoffs: HandoffSwitch[]): Promise<Partial<RelayState>> {
  const call = { organization_id: state.organization_id, id: state.call_id, channel: 'phone', agent_id: state.agent_id, agent_version: state.agent_version };
  const before = session.segments.length - handoffs.length;
  const { recordCallHandoff } = await import('../calls/handoffs');
  for (const [i, sw] of handoffs.entries()) await recordCallHandoff(call, sw, session.segments.slice(0, before + i + 1));
  const last = handoffs.at(-1)!;
  const next = session.current.agent;
  return {
    agent: {
      ...state.agent,
      model: last.model,
      temperature: last.temperature,
      knowledge_base: next.knowledge_base || null,
      selected_tools: (next.selected_tools ?? []) as Record<string, unknown>[],
      handoff_agents: next.handoff_agents ?? [],
    },
    system: last.system,
    conversation: last.conversation,
    segments: [...session.segments],
  };
}

import { toolsForAgent, type RunnableTool } from '../conversations/tools/catalog';
import { withHandoffTool } from '../conversations/handoff-tool';
import type { PendingToolCall } from '../conversations/engine';
import { DIGITS } from './protocol';
import type { RelayState } from './state';

/**
 * The tools of a relay call: the agent's (webhook tools, built-ins: run by the engine on the
 * platform) and, when the agent's `ivr_options` is on, `press_digits`, which the relay answers
 * itself with a `sendDigits` message.
 */

/** The built-in a relay call offers when the agent's `ivr_options` is on: the agent presses keys on a phone menu. */
export const PRESS_DIGITS_TOOL = 'press_digits';

const PRESS_DIGITS: RunnableTool = {
  kind: 'function',
  name: PRESS_DIGITS_TOOL,
  description: 'Press keys on the automated phone menu you reached (ConversationRelay sends them as tones). digits: 0-9, * and #; w waits half a second.',
  parameters: { type: 'object', properties: { digits: { type: 'string', description: 'The keys to press, e.g. "2" or "1w3#"' } }, required: ['digits'] },
  selection: {},
};

export const ivrInstructions = (goal: string) =>
  `\n\nIf you reach an automated phone menu, choose options with the ${PRESS_DIGITS_TOOL} tool instead of speaking${goal ? `; your goal there: ${goal}` : ''}.`;

/**
 * Each connection's tools, read once per warm container while its call lasts; at most
 * TOOL_CACHE_SIZE connections are kept (the least recently used goes first), and a connection's
 * entry goes at its end, so a container that serves many calls holds only the live ones.
 */
export const TOOL_CACHE_SIZE = 100;
const toolCache = new Map<string, Promise<RunnableTool[]>>();

export function relayTools(state: RelayState): Promise<RunnableTool[]> {
  // A hand-off changes the agent (relay/handoff.ts): its tools are another entry, whichever container read the old ones.
  const key = `${state.connection_id}#${state.segments?.length ?? 1}`;
  let tools = toolCache.get(key);
  if (tools) {
    toolCache.delete(key); // most recently used goes last
  } else {
    const agent = { id: state.segments?.at(-1)?.agent_id ?? state.agent_id, handoff_agents: state.agent.handoff_agents };
    tools = toolsForAgent(state.organization_id, state.agent.selected_tools, 'call').then((list) => withHandoffTool(state.agent.ivr ? [...list, PRESS_DIGITS] : list, agent));
    tools.catch(() => toolCache.delete(key));
  }
  toolCache.set(key, tools);
  while (toolCache.size > TOOL_CACHE_SIZE) toolCache.delete(toolCache.keys().next().value!);
  return tools;
}

/** The connection is over: its tools go. */
export const forgetRelayTools = (connectionId: string) => {
  for (const key of [...toolCache.keys()]) if (key.startsWith(`${connectionId}#`)) toolCache.delete(key);
};

/** Connections whose tools this container keeps (a test reads it). */
export const cachedToolConnections = () => toolCache.size;

/** The digits a `press_digits` call asked for, or undefined when they are not keys ConversationRelay can send. */
export function digitsOf(call: PendingToolCall): string | undefined {
  const digits = typeof call.arguments.digits === 'string' ? call.arguments.digits.replace(/\s/g, '') : '';
  return call.name === PRESS_DIGITS_TOOL && DIGITS.test(digits) ? digits : undefined;
}

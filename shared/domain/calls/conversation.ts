import { LlmError } from '../../adapters/llm/port';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import { findConversationAgent } from '../agents/service';
import type { Contact } from '../contacts/schemas';
import { runTurn, TurnDeadlineError, type ConversationMessage } from '../conversations/engine';
import { groundingSource } from '../conversations/grounding';
import { toolsForAgent } from '../conversations/tools/catalog';
import { agentTurnInput, type AgentConversation } from '../conversations/turn-input';
import { conversationSetup, loadConversationTimezone } from '../conversations/variables';
import { clockNow } from '../../clock';
import type { CallToolCalls, Transcript } from './schemas';
import type { CallItem } from './service';
import { conversationRef } from '../conversations/types';

/** The simulated caller's lines when the call's `metadata.simulated_caller` gives none: a greeting, a question, a goodbye. */
export const DEFAULT_CALLER_SCRIPT = ['Hi, yes, this is a good time.', 'Can you tell me what you can help me with?', 'Great, thank you. Goodbye.'];
/** Most caller lines one simulated call plays. */
export const MAX_CALLER_LINES = 50;
/** Each simulated turn's model budget. */
const TURN_BUDGET_MS = 20_000;

/** The caller's lines: `metadata.simulated_caller` when it is a non-empty array of strings, else the default script. */
export function callerScript(metadata: Record<string, unknown> | undefined): string[] {
  const given = metadata?.simulated_caller;
  if (Array.isArray(given)) {
    const lines = given.filter((l): l is string => typeof l === 'string' && l.trim().length > 0).map((l) => l.slice(0, 4000));
    if (lines.length) return lines.slice(0, MAX_CALLER_LINES);
  }
  return DEFAULT_CALLER_SCRIPT;
}

export interface SimulatedConversation {
  transcript: Transcript;
  toolCalls: CallToolCalls;
  /** Set when the agent ended the call (`end_call`) or transferred it, or the model failed. */
  endedBy?: 'agent' | 'transfer' | 'model_failure';
  transferTo?: string;
}

/**
 * An answered simulated call, as a conversation run by the engine (operations.md, "Calls that
 * converse"): the agent's filled begin message when it speaks first, then each caller line as a
 * user turn answered with the agent's prompt, knowledge base and tools (webhook and built-in; no
 * `function` tools on calls). `end_call` ends it early. Turns are spread over the call's length
 * for `time_sec`. A model that fails ends the conversation where it was (logged; the call still ends,
 * its transcript holding the caller's line the agent did not answer).
 */
export async function simulatedConversation(call: CallItem, seconds: number): Promise<SimulatedConversation> {
  const orgId = call.organization_id;
  const [agent, contact] = await Promise.all([
    findConversationAgent(orgId, call.agent_id, call.agent_version),
    call.contact_id ? getItem<Contact>(keys.contact(orgId, call.contact_id)) : Promise.resolve(undefined),
  ]);
  // One place makes a conversation's variables and opening (variables.ts); the call keeps the begin message it was placed with.
  const setup = conversationSetup({
    agent: agent ?? { name: '' },
    contact,
    dynamicVariables: call.dynamic_variables ?? {},
    beginMessage: call.begin_message,
    timezone: await loadConversationTimezone(orgId, call.agent_id, contact),
    now: clockNow(),
  });
  const opening = setup.beginMessage;
  const history: ConversationMessage[] = [];
  const speaksFirst = (agent?.start_speaker ?? 'agent') !== 'user';
  if (speaksFirst && opening) history.push({ role: 'agent', content: opening });
  const result: SimulatedConversation = { transcript: [], toolCalls: [] };
  if (agent) {
    const run: AgentConversation = {
      agent,
      system: setup.system,
      tools: await toolsForAgent(orgId, (agent.selected_tools ?? []) as Record<string, unknown>[], 'call'),
      conversation: conversationRef('call', call, setup.timezone),
      history,
      turnBudgetMs: TURN_BUDGET_MS,
    };
    // The knowledge base's index is read once for the whole call, each caller line ranked against it.
    const ground = agent.knowledge_base ? await groundingSource(orgId, agent.knowledge_base) : async () => [];
    for (const line of callerScript(call.metadata)) {
      try {
        const passages = await ground(line);
        const out = await runTurn(agentTurnInput(run, line, passages));
        history.push(...out.messages);
        if (out.effect.transferTo) {
          result.endedBy = 'transfer';
          result.transferTo = out.effect.transferTo;
          break;
        }
        if (out.effect.end) {
          result.endedBy = 'agent';
          break;
        }
      } catch (err) {
        if (!(err instanceof LlmError) && !(err instanceof TurnDeadlineError)) throw err;
        logger.warn('The model failed during a simulated call; the conversation ends there', { call_id: call.id, error: err as Error });
        // The caller said it all the same: the transcript keeps what was said, the agent's silence included.
        history.push({ role: 'user', content: line });
        result.endedBy = 'model_failure';
        break;
      }
    }
  }
  // Spread the turns over the call: each spoken line and each tool call takes a slot.
  const slots = history.filter((m) => ((m.role === 'agent' || m.role === 'user') && m.content) || m.role === 'tool_call').length;
  const time = (i: number) => Math.round(((seconds * i) / Math.max(1, slots)) * 10) / 10;
  let slot = 0;
  for (const m of history) {
    if ((m.role === 'agent' || m.role === 'user') && m.content) {
      result.transcript.push({ role: m.role, text: m.content, time_sec: time(slot++) });
    } else if (m.role === 'tool_call') {
      const answer = history.find((r) => r.role === 'tool_result' && r.tool_call_id === m.tool_call_id);
      result.toolCalls.push({ name: m.name ?? '', arguments: m.arguments ?? {}, result: answer?.result ?? null, time_sec: time(slot++) });
    }
  }
  return result;
}

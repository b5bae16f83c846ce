import { LlmError } from '../../adapters/llm/port';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import { findConversationAgent } from '../agents/service';
import type { Contact } from '../contacts/schemas';
import { runTurn, TurnDeadlineError, type ConversationMessage } from '../conversations/engine';
import { groundingSource } from '../conversations/grounding';
import { agentTools, handoffSession } from '../conversations/handoff';
import { currentAgentOf, segmentsOf, type Segment } from '../conversations/segments';
import { recordCallHandoff } from './handoffs';
import { agentTurnInput, type AgentConversation } from '../conversations/turn-input';
import { conversationSetup, loadConversationTimezone } from '../conversations/variables';
import { clockNow } from '../../clock';
import type { CallToolCalls, Transcript } from './schemas';
import type { CallItem } from './service';
import { conversationRef } from '../conversations/types';
import { simulatedWarmTransfer } from './simulated-transfer';
import { resumeGreeting } from './transfer-item';

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
  /** Set when the agent ended the call (`end_call`) or transferred it (cold, or warm and the person accepted), or the model failed. */
  endedBy?: 'agent' | 'transfer' | 'model_failure';
  transferTo?: string;
  /** The call's segments when the agent handed it off (each hand-off already recorded with its event); absent: none. */
  segments?: Segment[];
}

/**
 * An answered simulated call, as a conversation run by the engine (operations.md, "Calls that
 * converse"): the agent's filled begin message when it speaks first, then each caller line as a
 * user turn answered with the agent's prompt, knowledge base and tools (webhook and built-in; no
 * `function` tools on calls). `end_call` ends it early, and so does a cold `transfer_call`. A warm
 * one is made as on Twilio (simulated-transfer.ts): the person accepts and the call ends
 * `transferred`, or the agent says what became of the transfer (the resumed session's greeting)
 * and the caller's next line follows; the transcript keeps the transfer's two `system` lines.
 * Turns are spread over the call's length for `time_sec`. A model that fails ends the
 * conversation where it was (logged; the call still ends, its transcript holding the caller's line
 * the agent did not answer).
 */
export async function simulatedConversation(call: CallItem, seconds: number): Promise<SimulatedConversation> {
  const orgId = call.organization_id;
  const current = currentAgentOf(call);
  const [agent, contact] = await Promise.all([
    findConversationAgent(orgId, current.agent_id, current.agent_version),
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
  if (speaksFirst && opening) history.push({ role: 'agent', content: opening, agent_id: call.agent_id });
  const result: SimulatedConversation = { transcript: [], toolCalls: [] };
  // `system` lines (a warm transfer's briefing and outcome), each said after the first `at` messages of the history.
  const systemLines: { at: number; text: string }[] = [];
  const spread = (seconds: number) => spreadOver(history, systemLines, seconds);
  let warmTransfers = 0;
  if (agent) {
    const run: AgentConversation = {
      agent,
      system: setup.system,
      tools: await agentTools(orgId, agent, 'call'),
      conversation: { ...conversationRef('call', call, setup.timezone), agent_id: agent.id },
      history,
      turnBudgetMs: TURN_BUDGET_MS,
    };
    // The knowledge base's index is read once for the whole call (per agent), each caller line ranked against it.
    let ground = agent.knowledge_base ? await groundingSource(orgId, agent.knowledge_base) : async () => [];
    let line = '';
    // Agent-to-agent hand-offs (conversations/handoff.ts): the next requests are the new agent's.
    const handoffs = (agent.handoff_agents ?? []).length
      ? handoffSession({
          organization_id: orgId,
          channel: 'call',
          agent,
          agent_version: current.agent_version,
          segments: segmentsOf(call),
          conversation: run.conversation,
          setup: { contact, dynamicVariables: call.dynamic_variables ?? {}, timezone: setup.timezone },
          groundOn: () => line,
        })
      : undefined;
    for (const said of callerScript(call.metadata)) {
      line = said;
      try {
        const passages = await ground(line);
        const out = await runTurn({ ...agentTurnInput(run, line, passages), ...(handoffs ? { handoff: handoffs.hook } : {}) });
        history.push(...out.messages);
        if (handoffs && out.handoffs.length) {
          const at = handoffs.segments.length - out.handoffs.length;
          for (const [i, sw] of out.handoffs.entries()) await recordCallHandoff({ ...call, agent_version: call.agent_version ?? null }, sw, handoffs.segments.slice(0, at + i + 1));
          const last = out.handoffs.at(-1)!;
          const next = handoffs.current.agent;
          Object.assign(run, { agent: next, system: last.system, tools: last.tools, conversation: last.conversation });
          ground = next.knowledge_base ? await groundingSource(orgId, next.knowledge_base) : async () => [];
          result.segments = [...handoffs.segments];
        }
        if (out.effect.transferTo && out.effect.transferMode === 'warm') {
          const soFar = spread(seconds);
          const made = await simulatedWarmTransfer(call, warmTransfers++, { to: out.effect.transferTo, description: out.effect.transferDescription, reason: out.effect.transferReason }, soFar);
          for (const text of made.lines) systemLines.push({ at: history.length, text });
          // The end is written from the call read before this conversation (calls/lifecycle.ts): it must carry the transfers made since, for `call.ended`.
          if (made.transfers) call.transfers = made.transfers;
          if (made.outcome === 'connected') {
            result.endedBy = 'transfer';
            result.transferTo = out.effect.transferTo;
            break;
          }
          // The caller is back with the agent, which says so first (as a resumed relay session's greeting does).
          history.push({ role: 'agent', content: resumeGreeting(made.outcome), agent_id: run.conversation.agent_id });
          continue;
        }
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
  const spoken = spread(seconds);
  result.transcript = spoken.transcript;
  result.toolCalls = spoken.toolCalls;
  return result;
}

/**
 * The transcript and tool calls of a history, spread over the call: each spoken line, each tool
 * call and each `system` line takes a slot.
 */
function spreadOver(history: ConversationMessage[], systemLines: { at: number; text: string }[], seconds: number): { transcript: Transcript; toolCalls: CallToolCalls } {
  const out: { transcript: Transcript; toolCalls: CallToolCalls } = { transcript: [], toolCalls: [] };
  const slots = history.filter((m) => ((m.role === 'agent' || m.role === 'user') && m.content) || m.role === 'tool_call').length + systemLines.length;
  const time = (i: number) => Math.round(((seconds * i) / Math.max(1, slots)) * 10) / 10;
  let slot = 0;
  const systemAt = (at: number) => {
    for (const line of systemLines) if (line.at === at) out.transcript.push({ role: 'system', text: line.text, time_sec: time(slot++) });
  };
  for (const [i, m] of history.entries()) {
    systemAt(i);
    if ((m.role === 'agent' || m.role === 'user') && m.content) {
      out.transcript.push({ role: m.role, text: m.content, time_sec: time(slot++), ...(m.role === 'agent' && m.agent_id ? { agent_id: m.agent_id } : {}) });
    } else if (m.role === 'tool_call') {
      const answer = history.find((r) => r.role === 'tool_result' && r.tool_call_id === m.tool_call_id);
      out.toolCalls.push({ name: m.name ?? '', arguments: m.arguments ?? {}, result: answer?.result ?? null, time_sec: time(slot++) });
    }
  }
  systemAt(history.length);
  return out;
}

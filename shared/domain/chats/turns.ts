import { llm } from '../../adapters/llm';
import { LlmError } from '../../adapters/llm/port';
import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { ConditionFailed, transact, updateExisting, type TransactItem } from '../../db/store';
import { ConflictError, UnavailableError, UnprocessableError, ValidationError } from '../../errors';
import { logger } from '../../logger';
import type { Agent } from '../agents/schemas';
import { newEvent, type PlatformEvent } from '../events/publish';
import { runTurn, TurnDeadlineError, type ConversationMessage, type PendingToolCall, type TurnOutput } from '../conversations/engine';
import { toolsForAgent } from '../conversations/tools/catalog';
import { conversationRef } from '../conversations/types';
import { fillTemplate } from '../conversations/variables';
import { MAX_USER_MESSAGES, type ChatStatus, type ChatTurn } from './schemas';
import {
  afterEnd,
  endChatItem,
  eventData,
  findAgent,
  idleEntry,
  isActive,
  liveChat,
  messageView,
  messageWrites,
  readMessages,
  refusal,
  statusPartition,
  variablesOf,
  type ChatItem,
  type MessageItem,
  type Usage,
} from './store';

/**
 * A chat's turns: one user message, or the caller's answers to pending `function` tool calls, run
 * by the conversation engine and stored all or nothing (service.ts has the model). Only the turn
 * functions load the engine; the knowledge-base ranking loads on first use, for agents that have one.
 */
/** A turn's whole budget: API Gateway answers 504 at 30 s, so model and tool requests share 25 s. */
export const TURN_BUDGET_MS = 25_000;
/** What a 503 tells the caller to wait when the provider did not say. */
const DEFAULT_RETRY_AFTER_SECONDS = 5;

function asConversation(m: MessageItem): ConversationMessage {
  return {
    role: m.role,
    content: m.content ?? '',
    ...(m.tool_call_id ? { tool_call_id: m.tool_call_id, name: m.name ?? '' } : {}),
    ...(m.arguments ? { arguments: m.arguments } : {}),
    ...(m.role === 'tool_result' ? { result: m.result } : {}),
  };
}

/** The last user message of a history (what grounds a turn resumed after tool results). */
const lastUserText = (messages: MessageItem[]) => [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';

/** Runs the engine for one turn and stores what it added; see the module comment. */
async function runAndStore(item: ChatItem, agent: Agent, history: MessageItem[], turn: { userText?: string; toolResults?: { tool_call_id: string; name: string; output: unknown }[] }): Promise<ChatTurn> {
  const orgId = item.organization_id;
  const deadlineMs = Date.now() + TURN_BUDGET_MS;
  const now = clockNow().toISOString();
  const groundOn = turn.userText ?? lastUserText(history);
  const [tools, passages] = await Promise.all([
    toolsForAgent(orgId, (agent.selected_tools ?? []) as Record<string, unknown>[], 'chat'),
    agent.knowledge_base ? import('../conversations/grounding').then((g) => g.groundingPassages(orgId, agent.knowledge_base, groundOn)) : Promise.resolve([]),
  ]);
  let out: TurnOutput;
  try {
    out = await runTurn({
      llm: llm(),
      model: agent.model,
      temperature: agent.temperature,
      system: fillTemplate(agent.prompt ?? '', variablesOf(item, agent, now)),
      tools,
      conversation: conversationRef('chat', item),
      history: history.map(asConversation),
      ...(turn.userText !== undefined ? { userText: turn.userText } : {}),
      ...(turn.toolResults ? { toolResults: turn.toolResults } : {}),
      passages,
      roundsUsed: turn.toolResults ? item.rounds_used : 0,
      deadlineMs,
    });
  } catch (err) {
    if (err instanceof LlmError || err instanceof TurnDeadlineError) {
      const retryAfter = (err instanceof LlmError ? err.details.retryAfterSeconds : undefined) ?? DEFAULT_RETRY_AFTER_SECONDS;
      logger.warn('A chat turn failed at the model; nothing kept', { chat_id: item.id, error: err as Error });
      throw new UnavailableError('The agent\'s model did not answer; nothing was kept, so sending the same request again is safe', { reason: err instanceof LlmError ? err.reason : 'timeout', retry_after_seconds: retryAfter }, retryAfter);
    }
    throw err;
  }
  const at = clockNow().toISOString();
  const { writes, views } = messageWrites(orgId, item.id, item.message_count, out.messages, at);
  const userAdded = turn.userText !== undefined ? 1 : 0;
  const ends = !!out.effect.end && !out.pending.length;
  const status: ChatStatus = ends ? 'ended' : out.pending.length ? 'requires_action' : 'active';
  const usage: Usage = {
    llm_requests: item.usage.llm_requests + out.usage.requests,
    prompt_tokens: item.usage.prompt_tokens + out.usage.promptTokens,
    completion_tokens: item.usage.completion_tokens + out.usage.completionTokens,
  };
  const set: Record<string, unknown> = {
    status,
    gsi1pk: statusPartition(orgId, status),
    pending_tool_calls: out.pending,
    message_count: item.message_count + out.messages.length,
    user_messages: item.user_messages + userAdded,
    rounds_used: out.pending.length ? out.roundsUsed : 0,
    usage,
    last_message_at: at,
    updated_at: at,
  };
  const remove: string[] = [];
  if (ends) Object.assign(set, { end_reason: 'agent_ended', ended_at: at }), remove.push('gsi2pk', 'gsi2sk');
  else Object.assign(set, idleEntry(orgId, item.id, at));
  const next = { ...item, ...set } as ChatItem;
  if (ends) delete next.gsi2pk;
  const events: PlatformEvent[] = [];
  const eventWrites: TransactItem[] = [];
  if (ends) {
    const ended = newEvent(orgId, 'chat.ended', eventData(next, [...history.map(messageView), ...views]));
    events.push(ended.event);
    eventWrites.push(ended.write);
  }
  try {
    await transact([
      updateExisting(keys.chat(orgId, item.id), set, {
        remove,
        condition: '#mc = :mc AND #st = :st',
        names: { '#mc': 'message_count', '#st': 'status' },
        values: { ':mc': item.message_count, ':st': item.status },
      }),
      ...writes,
      ...eventWrites,
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new ConflictError('Another turn of this chat ran at the same time, or the chat changed; read it and try again', { id: item.id });
    throw err;
  }
  await afterEnd(next, events);
  return { chat: { id: item.id, status, end_reason: next.end_reason ?? null, pending_tool_calls: out.pending }, messages: views };
}

async function agentFor(item: ChatItem): Promise<Agent> {
  const agent = await findAgent(item.organization_id, item.agent_id);
  if (!agent) throw new UnprocessableError('The chat\'s agent has been deleted; start a chat with another agent', { agent_id: item.agent_id });
  if (!isActive(agent)) throw new UnprocessableError('The chat\'s agent is inactive', { agent_id: item.agent_id });
  return agent;
}

/** One user message: a turn. 409 when the chat has ended, waits for tool results, or another turn won the race. */
export async function sendMessage(orgId: string, chatId: string, content: string): Promise<ChatTurn> {
  const [item, history] = await Promise.all([liveChat(orgId, chatId), readMessages(orgId, chatId)]);
  const refused = refusal(item);
  if (refused) throw new ConflictError(refused, { id: chatId, status: item.status });
  if (item.user_messages >= MAX_USER_MESSAGES) {
    await endChatItem(item, 'max_turns', history.map(messageView));
    throw new ConflictError(`The chat reached ${MAX_USER_MESSAGES} user messages and has ended (max_turns)`, { id: chatId, status: 'ended' });
  }
  const agent = await agentFor(item);
  return runAndStore(item, agent, history, { userText: content });
}

/** The caller's answers to every pending `function` tool call; the turn goes on. */
export async function submitToolResults(orgId: string, chatId: string, results: { tool_call_id: string; output: unknown }[]): Promise<ChatTurn> {
  const [item, history] = await Promise.all([liveChat(orgId, chatId), readMessages(orgId, chatId)]);
  if (item.status !== 'requires_action') throw new ConflictError(item.status === 'ended' ? `The chat has ended (${item.end_reason})` : 'The chat has no pending tool calls', { id: chatId, status: item.status });
  const pending = new Map((item.pending_tool_calls ?? []).map((p: PendingToolCall) => [p.id, p]));
  const given = new Set<string>();
  const fields: { path: string; message: string }[] = [];
  results.forEach((r, i) => {
    if (!pending.has(r.tool_call_id)) fields.push({ path: `results.${i}.tool_call_id`, message: `"${r.tool_call_id}" is not a pending tool call of this chat` });
    else if (given.has(r.tool_call_id)) fields.push({ path: `results.${i}.tool_call_id`, message: `"${r.tool_call_id}" is answered twice` });
    given.add(r.tool_call_id);
  });
  for (const id of pending.keys()) if (!given.has(id)) fields.push({ path: 'results', message: `the pending tool call "${id}" has no result` });
  if (fields.length) throw new ValidationError(`Validation failed: ${fields.map((f) => `${f.path} ${f.message}`).join('; ')}`, fields);
  const agent = await agentFor(item);
  return runAndStore(item, agent, history, { toolResults: results.map((r) => ({ tool_call_id: r.tool_call_id, name: pending.get(r.tool_call_id)!.name, output: r.output })) });
}


import { v7 as uuidv7 } from 'uuid';
import { llm } from '../../adapters/llm';
import { LlmError } from '../../adapters/llm/port';
import { queue } from '../../adapters/queue';
import { clockMs, clockNow } from '../../clock';
import { collections, gsi1, gsi2, keys, Prefix } from '../../db/keys';
import { ConditionFailed, getItem, queryAll, readCounter, transact, updateExisting, putNew, type TransactItem } from '../../db/store';
import { countRange, equalityFilter, idBounds, queryRangePage, type RangeQuery } from '../../db/filtered-query';
import { ConflictError, NotFoundError, UnavailableError, UnprocessableError, ValidationError } from '../../errors';
import { logger } from '../../logger';
import { listResult } from '../common/list-result';
import type { Agent } from '../agents/schemas';
import type { Contact } from '../contacts/schemas';
import { activityPut } from '../contacts/history';
import { dispatchEvents, newEvent, type PlatformEvent } from '../events/publish';
import { runTurn, TurnDeadlineError, type ConversationMessage, type PendingToolCall, type TurnOutput } from '../conversations/engine';
import { groundingPassages } from '../conversations/grounding';
import { toolsForAgent } from '../conversations/tools/catalog';
import type { ConversationRef } from '../conversations/types';
import { conversationVariables, fillTemplate } from '../conversations/variables';
import {
  MAX_USER_MESSAGES,
  type Chat,
  type ChatChannel,
  type ChatEndReason,
  type ChatListInput,
  type ChatMessage,
  type ChatStatus,
  type ChatSummary,
  type ChatTurn,
  type StartChatInput,
} from './schemas';

/**
 * Chats: text conversations with an agent through the API (and the web widget), run by the
 * conversation engine. Storage (docs/data-model.md): the chat item in the organization's
 * partition (status in gsi1, the idle entry in gsi2 while open) and its messages as items of
 * their own (`ORG#<org>#CHAT#<id>`, `MSG#<seq>`). A turn reads the chat, the agent and the
 * messages, runs the engine, then writes the messages it added and the chat in ONE transaction
 * conditioned on the chat's `message_count` and `status` as read: of two racing turns exactly one
 * lands and the other answers 409; a model failure writes nothing.
 */

export const ENTITY = 'CHAT';
/** A chat with no message for this long ends with `inactivity`. */
export const IDLE_MS = 30 * 60_000;
export const CHAT_IDLE_SHARDS = 4;
/** A turn's whole budget: API Gateway answers 504 at 30 s, so model and tool requests share 25 s. */
export const TURN_BUDGET_MS = 25_000;
/** What a 503 tells the caller to wait when the provider did not say. */
const DEFAULT_RETRY_AFTER_SECONDS = 5;

type Usage = { llm_requests: number; prompt_tokens: number; completion_tokens: number };

export interface ChatItem extends Omit<ChatSummary, 'usage'> {
  pk: string;
  sk: string;
  entity: string;
  version: number;
  gsi1pk: string;
  gsi1sk: string;
  gsi2pk?: string;
  gsi2sk?: string;
  usage: Usage;
  /** Messages stored so far: the next message's sequence number, and the turn guard. */
  message_count: number;
  /** Tool rounds the turn waiting for `function` results already used. */
  rounds_used: number;
  last_message_at: string;
  /** The contact's placeholder values, taken when the chat started. */
  contact_variables: Record<string, string>;
  /** The agent's analysis settings, taken when the chat started (as a call takes them when placed). */
  analysis_model: string | null;
  analysis_prompt: string | null;
}

interface MessageItem extends ChatMessage {
  pk: string;
  sk: string;
  entity: string;
  seq: number;
}

const shardOf = (id: string) => parseInt(id.slice(-2), 16) % CHAT_IDLE_SHARDS;
const statusPartition = (orgId: string, status: ChatStatus) => gsi1.byStatus(orgId, ENTITY, status);
const idleEntry = (orgId: string, chatId: string, lastAt: string) => ({
  gsi2pk: gsi2.chatsIdle(shardOf(chatId)),
  gsi2sk: gsi2.chatIdleEntry(new Date(Date.parse(lastAt) + IDLE_MS).toISOString(), orgId, chatId),
});

function summary(item: ChatItem): ChatSummary {
  return {
    id: item.id,
    organization_id: item.organization_id,
    agent_id: item.agent_id,
    contact_id: item.contact_id ?? null,
    channel: item.channel,
    widget_id: item.widget_id ?? null,
    status: item.status,
    end_reason: item.end_reason ?? null,
    pending_tool_calls: item.pending_tool_calls ?? [],
    dynamic_variables: item.dynamic_variables ?? {},
    metadata: item.metadata ?? {},
    analysis: item.analysis ?? null,
    analysis_error: item.analysis_error ?? null,
    usage: item.usage,
    user_messages: item.user_messages,
    started_at: item.started_at,
    ended_at: item.ended_at ?? null,
    created_at: item.created_at,
    updated_at: item.updated_at,
  };
}

function messageView(m: MessageItem | (ChatMessage & Record<string, unknown>)): ChatMessage {
  return {
    id: m.id,
    role: m.role,
    content: m.content ?? '',
    tool_call_id: m.tool_call_id ?? null,
    name: m.name ?? null,
    arguments: m.arguments ?? null,
    ...(m.role === 'tool_result' ? { result: m.result ?? null } : {}),
    sources: m.sources ?? [],
    created_at: m.created_at,
  };
}

/** Event data carry the chat's messages while they fit in this many bytes of JSON (an event is one item); longer chats say `messages_omitted`. */
const MAX_EVENT_MESSAGES_BYTES = 200_000;

/** The data of a chat event: the chat, with its messages when they fit (GET /chats/{id} always has them). */
function eventData(item: ChatItem, messages?: ChatMessage[]): Record<string, unknown> {
  const data: Record<string, unknown> = { ...summary(item) };
  if (!messages) return data;
  if (Buffer.byteLength(JSON.stringify(messages), 'utf8') <= MAX_EVENT_MESSAGES_BYTES) data.messages = messages;
  else data.messages_omitted = true;
  return data;
}

async function readMessages(orgId: string, chatId: string): Promise<MessageItem[]> {
  const out: MessageItem[] = [];
  for await (const m of queryAll<MessageItem>({ pkName: 'pk', pkValue: keys.chatMessages(orgId, chatId), skName: 'sk', skPrefix: keys.chatMessagePrefix }, undefined, true)) out.push(m);
  return out;
}

const chatOf = (orgId: string, chatId: string) => getItem<ChatItem>(keys.chat(orgId, chatId));

async function liveChat(orgId: string, chatId: string): Promise<ChatItem> {
  const item = await chatOf(orgId, chatId);
  if (!item) throw new NotFoundError('Chat', chatId);
  return item;
}

/** The messages a write adds, numbered from `from`. */
function messageWrites(orgId: string, chatId: string, from: number, messages: ConversationMessage[], at: string): { writes: TransactItem[]; views: ChatMessage[] } {
  const writes: TransactItem[] = [];
  const views: ChatMessage[] = [];
  messages.forEach((m, i) => {
    const seq = from + i;
    const item = {
      ...keys.chatMessage(orgId, chatId, seq),
      entity: 'CHAT_MESSAGE',
      seq,
      id: uuidv7(),
      role: m.role,
      content: m.content,
      ...(m.tool_call_id ? { tool_call_id: m.tool_call_id, name: m.name } : {}),
      ...(m.role === 'tool_call' ? { arguments: m.arguments ?? {} } : {}),
      ...(m.role === 'tool_result' ? { result: m.result ?? null } : {}),
      ...(m.role === 'agent' ? { sources: m.sources ?? [] } : {}),
      created_at: at,
    };
    writes.push(putNew(item));
    views.push(messageView(item as unknown as MessageItem));
  });
  return { writes, views };
}

async function findAgent(orgId: string, agentId: string): Promise<Agent | undefined> {
  return getItem<Agent>(keys.agent(orgId, agentId));
}

const isActive = (agent: Agent) => agent.status !== 'AGENT_STATUS_INACTIVE';

/** Where a chat starts from: the API (default) or a widget. */
export interface ChatOrigin {
  channel: ChatChannel;
  widget_id?: string;
}

/**
 * Starts a chat with an active agent: the chat, its opening message (the agent's filled
 * `begin_message` when `start_speaker` is `agent`), the `chat.started` event, the `chats`
 * counter and the contact's timeline entry, in one transaction.
 */
export async function startChat(orgId: string, input: StartChatInput, origin: ChatOrigin = { channel: 'api' }): Promise<Chat> {
  const [agent, contact] = await Promise.all([
    findAgent(orgId, input.agent_id),
    input.contact_id ? getItem<Contact>(keys.contact(orgId, input.contact_id)) : Promise.resolve(undefined),
  ]);
  if (!agent) throw ValidationError.field('agent_id', `agent ${input.agent_id} does not exist in this organization`);
  if (!isActive(agent)) throw ValidationError.field('agent_id', `agent ${input.agent_id} is inactive`);
  if (input.contact_id && !contact) throw ValidationError.field('contact_id', `contact ${input.contact_id} does not exist in this organization`);
  const now = clockNow().toISOString();
  const id = uuidv7();
  const contactVariables = contact ? conversationVariables({ agentName: '', contact }) : {};
  delete contactVariables.agent_name;
  delete contactVariables.current_time;
  const item: ChatItem = {
    ...keys.chat(orgId, id),
    entity: ENTITY,
    version: 1,
    gsi1pk: statusPartition(orgId, 'active'),
    gsi1sk: id,
    ...idleEntry(orgId, id, now),
    id,
    organization_id: orgId,
    agent_id: agent.id,
    contact_id: input.contact_id ?? null,
    channel: origin.channel,
    widget_id: origin.widget_id ?? null,
    status: 'active',
    end_reason: null,
    pending_tool_calls: [],
    dynamic_variables: input.dynamic_variables ?? {},
    metadata: input.metadata ?? {},
    analysis: null,
    analysis_error: null,
    usage: { llm_requests: 0, prompt_tokens: 0, completion_tokens: 0 },
    user_messages: 0,
    message_count: 0,
    rounds_used: 0,
    started_at: now,
    ended_at: null,
    last_message_at: now,
    created_at: now,
    updated_at: now,
    contact_variables: contactVariables,
    analysis_model: agent.post_call_analysis_model || null,
    analysis_prompt: agent.analysis_summary_prompt || null,
  };
  const opening: ConversationMessage[] = [];
  if (agent.start_speaker !== 'user' && agent.begin_message.trim()) {
    opening.push({ role: 'agent', content: fillTemplate(agent.begin_message, variablesOf(item, agent, now)).trim(), sources: [] });
  }
  const { writes, views } = messageWrites(orgId, id, 0, opening, now);
  item.message_count = opening.length;
  const chat: Chat = { ...summary(item), messages: views };
  const started = newEvent(orgId, 'chat.started', eventData(item, views));
  const extra: TransactItem[] = contact ? [activityPut(orgId, contact.id, 'chat', `Chat started with agent ${agent.name}`, now)] : [];
  await transact([putNew({ ...item }), ...writes, started.write, ...extra], [{ orgId, collection: collections.chats, delta: 1 }]);
  await dispatchEvents([started.event]);
  return chat;
}

function variablesOf(item: ChatItem, agent: Agent, now: string): Record<string, string> {
  const base = conversationVariables({ agentName: agent.agent_name || agent.name, dynamicVariables: {}, now: new Date(now) });
  return { ...base, ...item.contact_variables, ...item.dynamic_variables };
}

export async function getChat(orgId: string, chatId: string): Promise<Chat> {
  const [item, messages] = await Promise.all([liveChat(orgId, chatId), readMessages(orgId, chatId)]);
  return { ...summary(item), messages: messages.map(messageView) };
}

/** The conversation a tool runs for. */
function conversationRef(item: ChatItem): ConversationRef {
  return {
    type: 'chat',
    id: item.id,
    organization_id: item.organization_id,
    agent_id: item.agent_id,
    contact_id: item.contact_id ?? null,
    dynamic_variables: item.dynamic_variables ?? {},
    metadata: item.metadata ?? {},
  };
}

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
    agent.knowledge_base ? groundingPassages(orgId, agent.knowledge_base, groundOn) : Promise.resolve([]),
  ]);
  let out: TurnOutput;
  try {
    out = await runTurn({
      llm: llm(),
      model: agent.model,
      temperature: agent.temperature,
      system: fillTemplate(agent.prompt ?? '', variablesOf(item, agent, now)),
      tools,
      conversation: conversationRef(item),
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

async function afterEnd(item: ChatItem, events: PlatformEvent[]): Promise<void> {
  await dispatchEvents(events);
  if (item.status === 'ended') await queue().send('chat-analysis', { organization_id: item.organization_id, chat_id: item.id });
}

/** Why a chat takes no message now (409), or nothing. */
function refusal(item: ChatItem): string | undefined {
  if (item.status === 'ended') return `The chat has ended (${item.end_reason})`;
  if (item.status === 'requires_action') return 'The chat is waiting for the results of its pending tool calls (POST /chats/{id}/tool-results)';
  return undefined;
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

/** Ends an open chat (conditioned on it being as read); false when it changed meanwhile. */
async function endChatItem(item: ChatItem, reason: ChatEndReason, messages: ChatMessage[]): Promise<boolean> {
  const orgId = item.organization_id;
  const at = clockNow().toISOString();
  const set = { status: 'ended', end_reason: reason, ended_at: at, updated_at: at, gsi1pk: statusPartition(orgId, 'ended'), pending_tool_calls: [] };
  const next = { ...item, ...set } as ChatItem;
  delete next.gsi2pk;
  const ended = newEvent(orgId, 'chat.ended', eventData(next, messages));
  try {
    await transact([
      updateExisting(keys.chat(orgId, item.id), set, {
        remove: ['gsi2pk', 'gsi2sk'],
        condition: '#mc = :mc AND #st = :st',
        names: { '#mc': 'message_count', '#st': 'status' },
        values: { ':mc': item.message_count, ':st': item.status },
      }),
      ended.write,
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) return false;
    throw err;
  }
  await afterEnd(next, [ended.event]);
  return true;
}

/** Ends a chat (`user_ended`); an ended chat is answered unchanged. */
export async function endChat(orgId: string, chatId: string): Promise<Chat> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const [item, messages] = await Promise.all([liveChat(orgId, chatId), readMessages(orgId, chatId)]);
    const views = messages.map(messageView);
    if (item.status === 'ended') return { ...summary(item), messages: views };
    if (await endChatItem(item, 'user_ended', views)) return getChat(orgId, chatId);
  }
  throw new ConflictError('The chat kept changing while ending it; retry', { id: chatId });
}

/**
 * Chats, newest first, without their messages. Unfiltered: the CHAT# items, total from
 * COUNT#chats. `status` reads that status's gsi1 partition; `from`/`to` bound the id range
 * (UUID v7); `agent_id`, `contact_id` and `channel` filter the range read (their cost grows with it).
 */
export async function listChats(orgId: string, q: ChatListInput) {
  if (q.from && q.to && q.to < q.from) throw ValidationError.field('to', 'must not be before from');
  const paging = { limit: q.limit, offset: q.offset, cursor: q.cursor };
  const { low, high } = idBounds(q.from, q.to);
  const filter = equalityFilter(([['agent_id', q.agent_id], ['contact_id', q.contact_id], ['channel', q.channel]] as [string, unknown][]).filter(([, v]) => v !== undefined));
  const range: RangeQuery = q.status
    ? { index: 'gsi1', pkName: 'gsi1pk', pkValue: statusPartition(orgId, q.status), skName: 'gsi1sk', skFrom: low, skTo: high, descending: true, filter }
    : { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skFrom: `${Prefix.chat}${low}`, skTo: `${Prefix.chat}${high}`, descending: true, filter };
  const unfiltered = !q.status && !filter && !q.from && !q.to;
  const [page, total] = await Promise.all([queryRangePage<ChatItem>(range, paging), unfiltered ? readCounter(orgId, collections.chats) : countRange(range)]);
  return listResult({ items: page.items.map(summary), nextCursor: page.nextCursor }, total, paging);
}

/**
 * The inactivity sweep (chat-sweep, every minute): ends `inactivity` every open chat whose last
 * message is IDLE_MS old, from the sparse idle index on gsi2 (never a Scan). Each chat is read
 * and ended conditioned on what was read, so a turn landing at the same moment wins cleanly.
 */
export async function sweepIdleChats(now: Date = clockNow()): Promise<{ found: number; ended: number }> {
  const cutoff = now.toISOString();
  let found = 0;
  let ended = 0;
  for (let shard = 0; shard < CHAT_IDLE_SHARDS; shard++) {
    const entries = queryAll<{ pk: string; sk: string }>({ index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.chatsIdle(shard), skName: 'gsi2sk', skBelow: `${cutoff}$` }, ['pk', 'sk']);
    for await (const entry of entries) {
      found++;
      const item = await getItem<ChatItem>({ pk: entry.pk, sk: entry.sk });
      if (!item || item.status === 'ended' || Date.parse(item.last_message_at) + IDLE_MS > clockMs()) continue;
      if (await endChatItem(item, 'inactivity', (await readMessages(item.organization_id, item.id)).map(messageView))) ended++;
    }
  }
  if (found) logger.info('Chat inactivity sweep', { found, ended });
  return { found, ended };
}

/** The chat-analysis job: analyses an ended chat once (as calls are analysed), then `chat.analyzed`. */
export async function analyzeChat(orgId: string, chatId: string): Promise<void> {
  const { analyzer, AnalysisError } = await import('../../adapters/analysis');
  const key = keys.chat(orgId, chatId);
  const item = await chatOf(orgId, chatId);
  if (!item || item.status !== 'ended' || item.analysis) return;
  const messages = await readMessages(orgId, chatId);
  const start = Date.parse(item.started_at);
  const transcript = messages
    .filter((m) => (m.role === 'agent' || m.role === 'user') && m.content)
    .map((m) => ({ role: m.role as 'agent' | 'user', text: m.content, time_sec: Math.max(0, Math.round((Date.parse(m.created_at) - start) / 100) / 10) }));
  let analysis;
  try {
    analysis = await analyzer().analyze({
      transcript,
      model: item.analysis_model,
      summaryPrompt: item.analysis_prompt,
      disconnectionReason: item.end_reason ?? 'user_ended',
      durationSec: Math.max(0, (Date.parse(item.ended_at ?? item.updated_at) - start) / 1000),
    });
  } catch (err) {
    const reason = err instanceof AnalysisError ? err.reason : 'error';
    await transact([updateExisting(key, { analysis_error: reason, updated_at: new Date().toISOString() }, { condition: 'attribute_not_exists(analysis) OR analysis = :null', values: { ':null': null } })]).catch((e) => {
      if (!(e instanceof ConditionFailed)) throw e;
    });
    throw err;
  }
  const now = new Date().toISOString();
  const next: ChatItem = { ...item, analysis, analysis_error: null, updated_at: now };
  const event = newEvent(orgId, 'chat.analyzed', eventData(next, messages.map(messageView)));
  try {
    await transact([
      updateExisting(key, { analysis, analysis_error: null, updated_at: now }, { condition: 'attribute_not_exists(analysis) OR analysis = :null', values: { ':null': null } }),
      event.write,
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) return; // analysed by another delivery meanwhile
    throw err;
  }
  await dispatchEvents([event.event]);
}

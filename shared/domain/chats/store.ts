import { v7 as uuidv7 } from 'uuid';
import { queue } from '../../adapters/queue';
import { clockNow } from '../../clock';
import { gsi1, gsi2, keys, shardOf, SWEEP_SHARDS, type Key } from '../../db/keys';
import { ConditionFailed, getItem, queryAll, storedBytes, transact, updateExisting, putNew, type TransactItem } from '../../db/store';
import { tableName } from '../../db/client';
import { logger } from '../../logger';
import { getKeyed, putItem } from '../../db/filtered-query';
import { NotFoundError } from '../../errors';
import type { Agent } from '../agents/schemas';
import { dispatchEvents, newEvent, type PlatformEvent } from '../events/publish';
import type { ConversationMessage } from '../conversations/engine';
import { latencyBuckets, latencySummary, type LatencyBuckets, type LatencySummary, type ReplyLatency } from '../conversations/latency';
import { conversationSetup, type ConversationSetup } from '../conversations/variables';
import { currentAgentOf, segmentsOf, type Segment } from '../conversations/segments';
import type { ChatEndReason, ChatMessage, ChatStatus, ChatSummary } from './schemas';

/**
 * The chat's storage, shared by the chat service (start, read, list, end, sweep, analysis) and its
 * turns (turns.ts): the items, their views and the writes every path makes. See service.ts for the model.
 */
export const ENTITY = 'CHAT';
/** A chat with no message for this long ends with `inactivity`. */
export const IDLE_MS = 30 * 60_000;
/** Partitions of the idle-chats index: the sweeps' shard count, by the same rule (keys.shardOf). */
export const CHAT_IDLE_SHARDS = SWEEP_SHARDS;
export type Usage = { llm_requests: number; prompt_tokens: number; completion_tokens: number };

export interface ChatItem extends Omit<ChatSummary, 'usage' | 'segments' | 'current_agent_id' | 'current_agent_version' | 'latency'> {
  /** The replies' times, written when the chat ends (conversations/latency.ts). */
  latency?: LatencySummary | null;
  /** The replies' figures as bucket counts, written with `latency` (what analytics counts). */
  latency_buckets?: LatencyBuckets;
  /** Stored once the chat was handed off (the whole chain); absent: the starting agent's one segment (conversations/segments.ts). */
  segments?: Segment[];
  /** The agents of `segments` (the list's `handled_by` filter); absent until a hand-off. */
  handled_by?: string[];
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
  /** A widget visitor's variables (the widget's `public_variables`): fill placeholders, never override another value. */
  visitor_variables?: Record<string, string>;
  /** The conversation's time zone, taken when the chat started (the contact's, else the agent's working hours', else UTC). */
  timezone?: string;
  /** The agent's analysis settings, taken when the chat started (as a call takes them when placed). */
  analysis_model: string | null;
  analysis_prompt: string | null;
  /** The running turn's claim (turns.ts): its id and when it lapses (epoch ms). */
  turn_claim?: string;
  turn_claim_until?: number;
  /** A turn kept after its model failed, which the same message sent again continues (turns.ts). */
  incomplete_turn?: IncompleteTurn | null;
  /**
   * The chat's latest messages not yet filed as items of their own, stored with the chat in each
   * turn's one write (at most LATEST_MESSAGES_MAX_BYTES: see `storeTurn`); readers merge them.
   */
  latest_messages?: MessageItem[];
  /** How many of the chat's first messages are filed as items (the rest are `latest_messages`); absent on chats from before it: read them. */
  filed_count?: number;
}

/** A turn kept after its model failed: what continues it (turns.ts). */
export interface IncompleteTurn {
  /** The user's message of the turn: sending it again continues the turn. */
  user_text: string;
  /** The sequence number of the turn's first kept message. */
  from_seq: number;
  /** Tool rounds it used. */
  rounds_used: number;
}

export interface MessageItem extends ChatMessage {
  pk: string;
  sk: string;
  entity: string;
  seq: number;
}

export const statusPartition = (orgId: string, status: ChatStatus) => gsi1.byStatus(orgId, ENTITY, status);
export const idleEntry = (orgId: string, chatId: string, lastAt: string) => ({
  gsi2pk: gsi2.chatsIdle(shardOf(chatId)),
  gsi2sk: gsi2.chatIdleEntry(new Date(Date.parse(lastAt) + IDLE_MS).toISOString(), orgId, chatId),
});

export function summary(item: ChatItem): ChatSummary {
  return {
    id: item.id,
    organization_id: item.organization_id,
    agent_id: item.agent_id,
    agent_version: item.agent_version ?? null,
    traffic_split_id: item.traffic_split_id ?? null,
    current_agent_id: currentAgentOf(item).agent_id,
    current_agent_version: currentAgentOf(item).agent_version,
    segments: segmentsOf(item),
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
    latency: item.latency ?? null,
    user_messages: item.user_messages,
    started_at: item.started_at,
    ended_at: item.ended_at ?? null,
    trace_id: item.trace_id ?? null,
    created_at: item.created_at,
    updated_at: item.updated_at,
  };
}

export function messageView(m: MessageItem | (ChatMessage & Record<string, unknown>)): ChatMessage {
  return {
    id: m.id,
    role: m.role,
    content: m.content ?? '',
    tool_call_id: m.tool_call_id ?? null,
    name: m.name ?? null,
    arguments: m.arguments ?? null,
    ...(m.role === 'tool_result' ? { result: m.result ?? null } : {}),
    sources: m.sources ?? [],
    agent_id: m.role === 'agent' ? ((m.agent_id as string | null | undefined) ?? null) : null,
    latency_ms: m.role === 'agent' ? ((m.latency_ms as ReplyLatency | null | undefined) ?? null) : null,
    created_at: m.created_at,
  };
}

/**
 * The chat's messages with every agent reply's `agent_id`: a reply stored before replies carried
 * it gets the agent whose segment it falls in (by its time; the starting agent when never handed off).
 */
export function withReplyAgents(item: ChatItem, views: ChatMessage[]): ChatMessage[] {
  if (!views.some((m) => m.role === 'agent' && !m.agent_id)) return views;
  const segments = segmentsOf(item);
  const agentAt = (at: string) => [...segments].reverse().find((s) => s.started_at <= at)?.agent_id ?? segments[0]!.agent_id;
  return views.map((m) => (m.role === 'agent' && !m.agent_id ? { ...m, agent_id: agentAt(m.created_at) } : m));
}

/** Event data carry the chat's messages while they fit in this many bytes of JSON (an event is one item); longer chats say `messages_omitted`. */
export const MAX_EVENT_MESSAGES_BYTES = 200_000;

/** The data of a chat event: the chat, with its messages when they fit (GET /chats/{id} always has them). */
export function eventData(item: ChatItem, messages?: ChatMessage[]): Record<string, unknown> {
  const data: Record<string, unknown> = { ...summary(item) };
  if (!messages) return data;
  if (Buffer.byteLength(JSON.stringify(messages), 'utf8') <= MAX_EVENT_MESSAGES_BYTES) data.messages = messages;
  else data.messages_omitted = true;
  return data;
}

/** Several messages filed together under the first one's key (`fileMessages`), in order. */
interface MessagePage {
  pk: string;
  sk: string;
  entity: 'CHAT_MESSAGE_PAGE';
  seq: number;
  messages: MessageItem[];
}

/** The chat's filed messages, pages opened (the latest ones may not be filed yet: `loadChat` reads both). */
async function readFiledMessages(orgId: string, chatId: string): Promise<MessageItem[]> {
  const out: MessageItem[] = [];
  for await (const m of queryAll<MessageItem | MessagePage>({ pkName: 'pk', pkValue: keys.chatMessages(orgId, chatId), skName: 'sk', skPrefix: keys.chatMessagePrefix }, undefined, true)) {
    if ('messages' in m && Array.isArray(m.messages)) out.push(...m.messages);
    else out.push(m as MessageItem);
  }
  return out;
}

export const chatOf = (orgId: string, chatId: string) => getItem<ChatItem>(keys.chat(orgId, chatId));

export async function liveChat(orgId: string, chatId: string): Promise<ChatItem> {
  const item = await chatOf(orgId, chatId);
  if (!item) throw new NotFoundError('Chat', chatId);
  return item;
}

/** A chat as read with all its messages; `unfiled`: its latest turn's messages not yet filed as items. */
export interface LoadedChat {
  item: ChatItem;
  messages: MessageItem[];
  unfiled: MessageItem[];
}

/** A chat's messages as a turn read them: what `storeTurn` needs to file the unfiled ones with the turn's. */
export type StoredMessages = Pick<LoadedChat, 'messages' | 'unfiled'>;

/**
 * The chat's messages 0…message_count-1 from the filed items and the chat's `latest_messages`
 * (undefined when one is missing: the two reads straddled a turn's filing, so read again).
 */
function mergeMessages(item: ChatItem, filed: MessageItem[]): Omit<LoadedChat, 'item'> | undefined {
  const bySeq = new Map(filed.map((m) => [m.seq, m]));
  const latest = item.latest_messages ?? [];
  const unfiled = latest.filter((m) => !bySeq.has(m.seq));
  for (const m of latest) bySeq.set(m.seq, m);
  const messages: MessageItem[] = [];
  for (let seq = 0; seq < item.message_count; seq++) {
    const m = bySeq.get(seq);
    if (!m) return undefined;
    messages.push(m);
  }
  return { messages, unfiled };
}

/**
 * Each chat's filed messages 0…n-1 this container has read, by `<org>/<chat>`: a filed message never
 * changes, so a chat whose `filed_count` the copy covers is read with its GetItem alone (no Query).
 */
const filedCopies = new Map<string, MessageItem[]>();
const MAX_FILED_COPIES = 500;
const copyKeyOf = (orgId: string, chatId: string) => `${orgId}/${chatId}`;

function keepFiledCopy(key: string, messages: MessageItem[]): void {
  filedCopies.delete(key);
  filedCopies.set(key, messages);
  if (filedCopies.size > MAX_FILED_COPIES) filedCopies.delete(filedCopies.keys().next().value!);
}

/**
 * The chat (404 when there is none) and all its messages. The chat and its filed messages are read
 * in parallel, unless this container holds the chat's filed messages (`filedCopies`): then the
 * chat is read alone, and the messages only when its `filed_count` shows more were filed since.
 */
export async function loadChat(orgId: string, chatId: string): Promise<LoadedChat>;
/** …and the item at `beside`, read with the chat in one BatchGetItem (undefined when there is none). */
export async function loadChat<T extends object>(orgId: string, chatId: string, beside: Key): Promise<LoadedChat & { beside: T | undefined }>;
export async function loadChat(orgId: string, chatId: string, beside?: Key): Promise<LoadedChat & { beside?: unknown }> {
  const key = copyKeyOf(orgId, chatId);
  let besideItem: unknown;
  const readChat = async (): Promise<ChatItem> => {
    if (!beside) return liveChat(orgId, chatId);
    const chatKey = keys.chat(orgId, chatId);
    const read = await getKeyed([chatKey, beside]);
    besideItem = read(beside);
    const item = read<ChatItem>(chatKey);
    if (!item) throw new NotFoundError('Chat', chatId);
    return item;
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    const copy = attempt === 0 ? filedCopies.get(key) : undefined;
    const [item, read] = await Promise.all([readChat(), copy ? undefined : readFiledMessages(orgId, chatId)]);
    const filed = read ?? (typeof item.filed_count === 'number' && item.filed_count <= copy!.length ? copy! : await readFiledMessages(orgId, chatId));
    const merged = mergeMessages(item, filed);
    if (!merged) continue;
    if (typeof item.filed_count === 'number') keepFiledCopy(key, merged.messages.slice(0, item.filed_count));
    return { item, ...merged, ...(beside ? { beside: besideItem } : {}) };
  }
  throw new Error(`The messages of chat ${chatId} kept changing while they were read`);
}

/**
 * How much of a chat's latest messages ride on the chat item (as stored) before they are filed as
 * items of their own: a few short turns. The chat item is copied into both indexes on every write,
 * so this bound is what each turn's write pays for it (docs/benchmarks.md, (f)).
 */
export const LATEST_MESSAGES_MAX_BYTES = 2 * 1024;

/**
 * Files messages (at most LATEST_MESSAGES_MAX_BYTES of them) as ONE page item under the first one's
 * key, so the messages Query reads a few items however long the chat. Idempotent: a message never
 * changes, and a message filed twice (in two pages) is read once (`loadChat` keys them by number).
 */
async function fileMessages(messages: MessageItem[]): Promise<void> {
  if (!messages.length) return;
  const first = messages[0]!;
  const page: MessagePage = { pk: first.pk, sk: first.sk, entity: 'CHAT_MESSAGE_PAGE', seq: first.seq, messages };
  await transact([putItem({ ...page })]);
}

/**
 * Stores a turn: the chat's update (`set`, `options`: its condition, what it removes) and the
 * messages it adds, atomically. A turn that ends nothing (no `events`) writes ONE UpdateItem while
 * the chat's unfiled messages and its own fit LATEST_MESSAGES_MAX_BYTES: they ride on the chat as
 * `latest_messages` (every reader merges them with the filed ones: `loadChat`). When they do not
 * fit, the unfiled ones are filed first (a BatchWriteItem) and the turn's own start the chat's
 * `latest_messages` again. A turn that ends the chat, or whose own messages are larger, files the
 * unfiled ones and writes the chat, its messages and its events in one transaction.
 */
export async function storeTurn(
  item: ChatItem,
  loaded: StoredMessages,
  set: Record<string, unknown>,
  options: { remove: string[]; condition: string; names: Record<string, string>; values: Record<string, unknown> },
  messages: MessageItem[],
  events: TransactItem[] = [],
  /** Writes that ride with the chat's update on either path (a hand-off's events: the turn stays one small transaction). */
  beside: TransactItem[] = [],
): Promise<TurnPlacement> {
  const key = keys.chat(item.organization_id, item.id);
  const { unfiled } = loaded;
  // This container's copy of the filed messages follows what it files (loadChat).
  const copyKey = copyKeyOf(item.organization_id, item.id);
  if (!events.length && messages.length && storedBytes(messages) <= LATEST_MESSAGES_MAX_BYTES) {
    const carried = [...unfiled, ...messages];
    const full = storedBytes(carried) > LATEST_MESSAGES_MAX_BYTES;
    if (full) await fileMessages(unfiled);
    // Filed: every message before the turn's once the chat's were filed, else as before.
    const filed = full ? { filed_count: item.message_count } : {};
    const latest = full ? messages : carried;
    await transact([updateExisting(key, { ...set, ...filed, latest_messages: latest }, options), ...beside]);
    if (full) keepFiledCopy(copyKey, loaded.messages);
    return { listFrom: latest[0]!.seq };
  }
  await fileMessages(unfiled);
  const filedCount = item.message_count + messages.length;
  await transact([updateExisting(key, { ...set, filed_count: filedCount }, { ...options, remove: [...options.remove, 'latest_messages'] }), ...messages.map((m) => putNew({ ...m })), ...events, ...beside]);
  keepFiledCopy(copyKey, [...loaded.messages, ...messages]);
  return { listFrom: undefined };
}

/**
 * Where a turn's messages went: on the chat's `latest_messages`, whose first element is message
 * `listFrom` (when that list is filed, its page is keyed by that message: `fileMessages`), or with
 * `listFrom` undefined each its own item.
 */
export interface TurnPlacement {
  listFrom: number | undefined;
}

/** A reply's figures to store: which message (seq and id) and its `latency_ms`. */
export interface FinalFigures {
  seq: number;
  id: string;
  latency_ms: ReplyLatency;
}

/** A lone conditional SET of the messages' `latency_ms` at each `path` ('' for the item itself), each checked by its id (no `version` bump: figures of a reply, not a change of state). */
function setMembers(key: Key, paths: { path: string; value: unknown; id: string }[], names: Record<string, string>): TransactItem {
  const values: Record<string, unknown> = {};
  const sets: string[] = [];
  const conditions: string[] = [];
  paths.forEach(({ path, value, id }, i) => {
    values[`:l${i}`] = value;
    values[`:id${i}`] = id;
    const at = (member: string) => (path ? `${path}.${member}` : member);
    sets.push(`${at('#lat')} = :l${i}`);
    conditions.push(`${at('#id')} = :id${i}`);
  });
  return {
    Update: {
      TableName: tableName(),
      Key: key,
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: conditions.join(' AND '),
      ExpressionAttributeNames: { ...names, '#lat': 'latency_ms', '#id': 'id' },
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * Stores the final figures of a turn's replies answered whole, after the answer (docs/api.md,
 * "Latency of every reply"), where the turn put them (`placement`). A list that a later turn filed
 * meanwhile is found in its page; a reply no longer where it was looked for (the next turn read the
 * chat before this write and moved its copy) keeps the figures of its write, and that is logged.
 */
export async function storeFinalFigures(orgId: string, chatId: string, placement: TurnPlacement, replies: FinalFigures[]): Promise<void> {
  if (!replies.length) return;
  const attempt = async (item: TransactItem) => {
    try {
      await transact([item]);
      return true;
    } catch (err) {
      if (err instanceof ConditionFailed) return false;
      throw err;
    }
  };
  const from = placement.listFrom;
  const lost = from === undefined ? await storedEach(replies, attempt, (r) => setMembers(keys.chatMessage(orgId, chatId, r.seq), [{ path: '', value: r.latency_ms, id: r.id }], {})) : await storedInList(replies, from, attempt, orgId, chatId);
  if (lost.length) logger.info('A reply\'s final figures found no place: it keeps those of its write', { chat_id: chatId, seqs: lost });
}

/** Per-message items (a large turn): each reply's own item; gives back the seqs not found. */
async function storedEach(replies: FinalFigures[], attempt: (item: TransactItem) => Promise<boolean>, item: (r: FinalFigures) => TransactItem): Promise<number[]> {
  const lost = [];
  for (const r of replies) if (!(await attempt(item(r)))) lost.push(r.seq);
  return lost;
}

/** In the chat's latest list, or in the page a later turn filed it to; gives back the seqs not found in either. */
async function storedInList(replies: FinalFigures[], from: number, attempt: (item: TransactItem) => Promise<boolean>, orgId: string, chatId: string): Promise<number[]> {
  const inList = replies.map((r) => ({ path: `#list[${r.seq - from}]`, value: r.latency_ms, id: r.id }));
  if (await attempt(setMembers(keys.chat(orgId, chatId), inList, { '#list': 'latest_messages' }))) return [];
  if (await attempt(setMembers(keys.chatMessage(orgId, chatId, from), inList, { '#list': 'messages' }))) return [];
  return replies.map((r) => r.seq);
}

/** The messages a write adds, numbered from `from`: their items, puts and views. */
export function messageWrites(orgId: string, chatId: string, from: number, messages: ConversationMessage[], at: string): { writes: TransactItem[]; views: ChatMessage[]; items: MessageItem[] } {
  const writes: TransactItem[] = [];
  const views: ChatMessage[] = [];
  const items: MessageItem[] = [];
  messages.forEach((m, i) => {
    const seq = from + i;
    const item = {
      ...keys.chatMessage(orgId, chatId, seq),
      entity: 'CHAT_MESSAGE',
      seq,
      // A streamed turn told its messages' ids (and when) before storing them.
      id: m.id ?? uuidv7(),
      role: m.role,
      content: m.content,
      ...(m.tool_call_id ? { tool_call_id: m.tool_call_id, name: m.name } : {}),
      ...(m.role === 'tool_call' ? { arguments: m.arguments ?? {} } : {}),
      ...(m.role === 'tool_result' ? { result: m.result ?? null } : {}),
      ...(m.role === 'agent' ? { sources: m.sources ?? [], ...(m.agent_id ? { agent_id: m.agent_id } : {}), ...(m.latency_ms ? { latency_ms: m.latency_ms } : {}) } : {}),
      created_at: m.created_at ?? at,
    };
    writes.push(putNew(item));
    items.push(item as unknown as MessageItem);
    views.push(messageView(item as unknown as MessageItem));
  });
  return { writes, views, items };
}

export async function findAgent(orgId: string, agentId: string): Promise<Agent | undefined> {
  return getItem<Agent>(keys.agent(orgId, agentId));
}

export const isActive = (agent: Agent) => agent.status !== 'AGENT_STATUS_INACTIVE';

/**
 * A chat's variables, filled prompt and opening at `now` (variables.ts, `conversationSetup`): the
 * contact's values and the zone as taken when the chat started, the visitor's variables, the
 * chat's dynamic variables winning.
 */
export function setupOf(item: ChatItem, agent: Agent, now: string): ConversationSetup {
  return conversationSetup({
    agent,
    contactVariables: item.contact_variables ?? {},
    visitorVariables: item.visitor_variables,
    dynamicVariables: item.dynamic_variables,
    timezone: item.timezone,
    now: new Date(now),
  });
}

/** A chat's placeholder values at `now` (see setupOf). */
export function variablesOf(item: ChatItem, agent: Agent, now: string): Record<string, string> {
  return setupOf(item, agent, now).variables;
}

export async function afterEnd(item: ChatItem, events: PlatformEvent[]): Promise<void> {
  await dispatchEvents(events);
  if (item.status === 'ended') await requeueAnalysis(item);
}

/** Queues an ended chat's analysis (again: the job analyses a chat once). */
export async function requeueAnalysis(item: ChatItem): Promise<void> {
  await queue().send('chat-analysis', { organization_id: item.organization_id, chat_id: item.id });
}

/** Why a chat takes no message now (409), or nothing. */
export function refusal(item: ChatItem): string | undefined {
  if (item.status === 'ended') return `The chat has ended (${item.end_reason})`;
  if (item.status === 'requires_action') return 'The chat is waiting for the results of its pending tool calls (POST /chats/{id}/tool-results)';
  return undefined;
}

/** Ends an open chat (conditioned on it being as read); false when it changed meanwhile. */
/** What a chat's end writes of its replies' times: its `latency`, and the bucket counts analytics adds up (analytics/counters.ts). */
export function chatLatency(messages: ChatMessage[]): { latency: LatencySummary | null; latency_buckets: LatencyBuckets } {
  const replies = messages.filter((m) => m.role === 'agent').map((m) => m.latency_ms);
  return { latency: latencySummary(replies), latency_buckets: latencyBuckets(replies) };
}

export async function endChatItem(item: ChatItem, reason: ChatEndReason, messages: ChatMessage[]): Promise<boolean> {
  const orgId = item.organization_id;
  const at = clockNow().toISOString();
  const set = { status: 'ended', end_reason: reason, ended_at: at, updated_at: at, gsi1pk: statusPartition(orgId, 'ended'), pending_tool_calls: [], ...chatLatency(messages) };
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


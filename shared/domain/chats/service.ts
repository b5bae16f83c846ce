import { v7 as uuidv7 } from 'uuid';
import { currentTraceId } from '../../telemetry/tracing';
import { armSweep, earlier as earlierIso, sweepDue } from '../../db/sweep-marker';
import { clockMs, clockNow } from '../../clock';
import { collections, gsi2, keys, Prefix } from '../../db/keys';
import { getItem, queryPage, readCounter, transact, putNew, type TransactItem } from '../../db/store';
import { countRange, equalityFilter, idBounds, queryRangePage, type RangeQuery } from '../../db/filtered-query';
import { ConflictError, NotFoundError, ValidationError } from '../../errors';
import { logger } from '../../logger';
import { listResult } from '../common/list-result';
import type { Contact } from '../contacts/schemas';
import { activityPut } from '../contacts/history';
import { dispatchEvents, newEvent } from '../events/publish';
import type { ConversationMessage } from '../conversations/engine';
import { contactVariables, loadConversationTimezone } from '../conversations/variables';
import { resolveAgentVersion } from '../agents/versions';
import { personKey } from '../agents/traffic-split';
import type { Chat, ChatChannel, ChatListInput, StartChatInput } from './schemas';
import {
  CHAT_IDLE_SHARDS,
  endChatItem,
  ENTITY,
  eventData,
  findAgent,
  IDLE_MS,
  idleEntry,
  isActive,
  messageView,
  withReplyAgents,
  messageWrites,
  loadChat,
  statusPartition,
  requeueAnalysis,
  summary,
  setupOf,
  type ChatItem,
} from './store';

export { IDLE_MS, CHAT_IDLE_SHARDS, ENTITY, type ChatItem };

/**
 * Chats: text conversations with an agent through the API (and the web widget), run by the
 * conversation engine. Storage (docs/data-model.md): the chat item in the organization's
 * partition (status in gsi1, the idle entry in gsi2 while open) and its messages as items of
 * their own (`ORG#<org>#CHAT#<id>`, `MSG#<seq>`), the latest few riding on the chat item
 * (`latest_messages`) until filed: readers merge the two (store.ts, `loadChat`). A turn reads the
 * chat and its messages, runs the engine, then stores what it added in ONE write conditioned on
 * the chat's `message_count` and `status` as read (store.ts, `storeTurn`): of two racing turns
 * exactly one lands and the other answers 409; a model failure writes nothing.
 */

/** Where a chat starts from: the API (default) or a widget. */
export interface ChatOrigin {
  channel: ChatChannel;
  widget_id?: string;
  /** A widget visitor's values of the widget's `public_variables`, kept apart from `dynamic_variables`. */
  visitor_variables?: Record<string, string>;
  /** A widget visitor's own id (the widget keeps it): the person a traffic split sticks to when the chat has no contact. */
  visitor_id?: string;
}

/**
 * Starts a chat with an active agent: the chat, its opening message (the agent's filled
 * `begin_message` when `start_speaker` is `agent`), the `chat.started` event, the `chats`
 * counter and the contact's timeline entry, in one transaction.
 */
export async function startChat(orgId: string, input: StartChatInput, origin: ChatOrigin = { channel: 'api' }): Promise<Chat> {
  const [draft, contact] = await Promise.all([
    findAgent(orgId, input.agent_id),
    input.contact_id ? getItem<Contact>(keys.contact(orgId, input.contact_id)) : Promise.resolve(undefined),
  ]);
  if (!draft) throw ValidationError.field('agent_id', `agent ${input.agent_id} does not exist in this organization`);
  if (!isActive(draft)) throw ValidationError.field('agent_id', `agent ${input.agent_id} is inactive`);
  if (input.contact_id && !contact) throw ValidationError.field('contact_id', `contact ${input.contact_id} does not exist in this organization`);
  // The version the chat runs for its whole life (agents/versions.ts): pinned, else published, else the draft.
  // Under a traffic split, drawn for the person (agents/traffic-split.ts): the contact, else the widget visitor.
  const person = personKey({ contactId: input.contact_id, visitorId: origin.visitor_id });
  const { agent, agent_version: agentVersion, traffic_split_id: splitId } = await resolveAgentVersion(orgId, draft, input.agent_version, undefined, person);
  const timezone = await loadConversationTimezone(orgId, agent.id, contact);
  const now = clockNow().toISOString();
  const id = uuidv7();
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
    agent_version: agentVersion,
    traffic_split_id: splitId,
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
    trace_id: currentTraceId(),
    created_at: now,
    updated_at: now,
    contact_variables: contact ? contactVariables(contact) : {},
    timezone,
    ...(origin.visitor_variables ? { visitor_variables: origin.visitor_variables } : {}),
    analysis_model: agent.post_call_analysis_model || null,
    analysis_prompt: agent.analysis_summary_prompt || null,
  };
  const opening: ConversationMessage[] = [];
  if (agent.start_speaker !== 'user' && agent.begin_message.trim()) {
    opening.push({ role: 'agent', content: setupOf(item, agent, now).beginMessage, sources: [], agent_id: agent.id });
  }
  const { writes, views } = messageWrites(orgId, id, 0, opening, now);
  item.message_count = opening.length;
  item.filed_count = opening.length;
  const chat: Chat = { ...summary(item), messages: views };
  const started = newEvent(orgId, 'chat.started', eventData(item, views));
  const extra: TransactItem[] = contact ? [activityPut(orgId, contact.id, 'chat', `Chat started with agent ${agent.name}`, now)] : [];
  await transact([putNew({ ...item }), ...writes, started.write, ...extra], [{ orgId, collection: collections.chats, delta: 1 }]);
  await dispatchEvents([started.event]);
  return chat;
}

export async function getChat(orgId: string, chatId: string): Promise<Chat> {
  const { item, messages } = await loadChat(orgId, chatId);
  return { ...summary(item), messages: withReplyAgents(item, messages.map(messageView)) };
}

/** Ends a chat (`user_ended`); an ended chat is answered unchanged. */
export async function endChat(orgId: string, chatId: string): Promise<Chat> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const { item, messages } = await loadChat(orgId, chatId);
    const views = messages.map(messageView);
    if (item.status === 'ended') {
      // An end answered 503 because its analysis could not be queued is finished by its retry: queued
      // again while the chat has no analysis (the analysis job does nothing for an analyzed chat).
      if (!item.analysis && !item.analysis_error) await requeueAnalysis(item);
      return { ...summary(item), messages: views };
    }
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
  const equal = equalityFilter(([['agent_id', q.agent_id], ['contact_id', q.contact_id], ['channel', q.channel]] as [string, unknown][]).filter(([, v]) => v !== undefined));
  // handled_by: the agent the chat started with, or one it was handed off to (`handled_by` is stored at the first hand-off).
  const handled = q.handled_by ? { expression: '(#hb_a = :hb OR contains(#hb_l, :hb))', names: { '#hb_a': 'agent_id', '#hb_l': 'handled_by' }, values: { ':hb': q.handled_by } } : undefined;
  const filter = equal && handled
    ? { expression: `${equal.expression} AND ${handled.expression}`, names: { ...equal.names, ...handled.names }, values: { ...equal.values, ...handled.values } }
    : (equal ?? handled);
  const range: RangeQuery = q.status
    ? { index: 'gsi1', pkName: 'gsi1pk', pkValue: statusPartition(orgId, q.status), skName: 'gsi1sk', skFrom: low, skTo: high, descending: true, filter }
    : { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skFrom: `${Prefix.chat}${low}`, skTo: `${Prefix.chat}${high}`, descending: true, filter };
  const unfiltered = !q.status && !filter && !q.from && !q.to;
  const [page, total] = await Promise.all([queryRangePage<ChatItem>(range, paging), unfiltered ? readCounter(orgId, collections.chats) : countRange(range)]);
  return listResult({ items: page.items.map(summary), nextCursor: page.nextCursor }, total, paging);
}

/** How much earlier than IDLE_MS after a write an idle entry may fall due: a turn's budget (25 s) and clock skew, rounded up. */
export const CHAT_SWEEP_SLACK_MS = 2 * 60_000;

/**
 * The inactivity sweep (chat-sweep, every minute): ends `inactivity` every open chat whose last
 * message is IDLE_MS old, from the sparse idle index on gsi2 (never a Scan). Each chat is read
 * and ended conditioned on what was read, so a turn landing at the same moment wins cleanly.
 * An idle minute is one GetItem, the sweep's marker (shared/db/sweep-marker.ts): every idle
 * entry is written due IDLE_MS after its write, so no writer lowers the marker; the sweep leaves
 * it at the earliest entry it did not end, at most IDLE_MS - CHAT_SWEEP_SLACK_MS ahead.
 */
export async function sweepIdleChats(now: Date = clockNow()): Promise<{ found: number; ended: number; ran: boolean }> {
  const cutoff = now.toISOString();
  const gate = await sweepDue('chat-sweep', cutoff, IDLE_MS);
  if (!gate.due) return { found: 0, ended: 0, ran: false };
  // An entry written from here on is due IDLE_MS after its write (a turn's own time, at most its budget earlier).
  let earliestLeft: string | undefined = new Date(now.getTime() + IDLE_MS - CHAT_SWEEP_SLACK_MS).toISOString();
  let found = 0;
  let ended = 0;
  for (let shard = 0; shard < CHAT_IDLE_SHARDS; shard++) {
    const range = { index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.chatsIdle(shard), skName: 'gsi2sk', skBelow: `${earliestLeft}$` };
    let cursor: string | undefined;
    let pastNow = false;
    do {
      const page = await queryPage<{ pk: string; sk: string; gsi2sk: string }>(range, { limit: 50, ...(cursor ? { cursor } : {}) });
      for (const entry of page.items) {
        const idleAt = entry.gsi2sk.slice(0, entry.gsi2sk.indexOf('#'));
        if (idleAt > cutoff) {
          earliestLeft = earlierIso(earliestLeft, idleAt);
          pastNow = true;
          break;
        }
        found++;
        const item = await getItem<ChatItem>({ pk: entry.pk, sk: entry.sk });
        if (!item || item.status === 'ended') continue;
        if (Date.parse(item.last_message_at) + IDLE_MS > clockMs()) {
          earliestLeft = earlierIso(earliestLeft, new Date(Date.parse(item.last_message_at) + IDLE_MS).toISOString());
          continue;
        }
        // The chat with its messages (re-read with them); ended conditioned on it as read.
        const loaded = await loadChat(item.organization_id, item.id).catch((err: unknown) => {
          if (err instanceof NotFoundError) return undefined; // deleted meanwhile
          throw err;
        });
        if (!loaded) continue;
        if (loaded.item.message_count !== item.message_count || loaded.item.status !== item.status) continue; // a turn landed: not idle
        if (await endChatItem(loaded.item, 'inactivity', loaded.messages.map(messageView))) ended++;
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor && !pastNow);
  }
  await armSweep('chat-sweep', earliestLeft!);
  if (found) logger.info('Chat inactivity sweep', { found, ended });
  return { found, ended, ran: true };
}



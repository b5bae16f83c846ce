import { llm } from '../../adapters/llm';
import { v7 as uuidv7 } from 'uuid';
import { isRetryable, LlmError, permanentReason } from '../../adapters/llm/port';
import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { ConditionFailed, transact, updateExisting, type TransactItem } from '../../db/store';
import { BadGatewayError, ConflictError, UnavailableError, UnprocessableError, ValidationError } from '../../errors';
import { logger } from '../../logger';
import { recordReplies } from '../../telemetry/metrics';
import type { Agent } from '../agents/schemas';
import { dispatchEvents, newEvent, type PlatformEvent } from '../events/publish';
import { keptTurnOf, runTurn, TurnDeadlineError, type ConversationMessage, type KeptTurn, type PendingToolCall, type TurnOutput } from '../conversations/engine';
import type { HandoffSession } from '../conversations/handoff';
import { agentTools } from '../conversations/handoff-tool';
import { currentAgentOf, handledAgentIds, segmentsOf } from '../conversations/segments';
import { conversationRef } from '../conversations/types';
import { ReplyTimer } from '../conversations/latency';
import { effectiveModel } from '../agents/models';
import { agentOfConversation } from '../agents/versions';
import { MAX_USER_MESSAGES, type ChatMessage, type ChatStatus, type ChatTurn } from './schemas';
import type { AnswerTask } from '../../after-answer';
import { engineStream, type ChatTurnListener } from './stream';
import {
  afterEnd,
  chatLatency,
  endChatItem,
  eventData,
  findAgent,
  idleEntry,
  isActive,
  loadChat,
  messageView,
  messageWrites,
  refusal,
  statusPartition,
  setupOf,
  storeFinalFigures,
  storeTurn,
  type ChatItem,
  type FinalFigures,
  type TurnPlacement,
  type IncompleteTurn,
  type MessageItem,
  type StoredMessages,
  type Usage,
} from './store';

/**
 * A chat's turns: one user message, or the caller's answers to pending `function` tool calls, run
 * by the conversation engine (service.ts has the model). Only the turn functions load the engine;
 * the knowledge-base ranking loads on first use, for agents that have one.
 *
 * A tool call runs once (docs/api.md, "Chats"):
 * - A turn first CLAIMS the chat (`turn_claim`, `turn_claim_until` on the chat item, a conditional
 *   write on `message_count`, `status` and no live claim) before it grounds, calls the model or
 *   runs a tool: the loser of two racing turns answers 409 having run nothing. The claim lasts
 *   TURN_CLAIM_MS (a crashed turn frees the chat by itself) and is released when the turn stores.
 * - A turn whose model fails (or whose time runs out) after platform tools ran KEEPS what it did:
 *   the user's message and every tool call with its result are stored and the chat item records
 *   `incomplete_turn` (the user's text, the rounds used). The same text sent again CONTINUES that
 *   turn from the kept results (no second user message, no tool run again); any other message
 *   leaves it as it is and starts a new turn. A model failure before any platform tool ran keeps
 *   nothing, as before.
 */
/** A turn's whole budget: API Gateway answers 504 at 30 s, so model and tool requests share 25 s. */
export const TURN_BUDGET_MS = 25_000;
/** How long a turn's claim on its chat lasts: its budget and a margin, so a crashed turn frees the chat. */
export const TURN_CLAIM_MS = TURN_BUDGET_MS + 5_000;
/** What a 503 tells the caller to wait when the provider did not say. */
const DEFAULT_RETRY_AFTER_SECONDS = 5;


/**
 * The condition every turn's write carries: the chat as read, and the claim still ours; a turn that
 * took no claim (it can run no tool: `needsClaim`) writes only while no other turn holds a live one,
 * so it never lands under a turn whose tools are running.
 */
const claimed = (item: ChatItem, claim: string | undefined): { condition: string; names: Record<string, string>; values: Record<string, unknown> } =>
  claim
    ? {
        condition: '#mc = :mc AND #st = :st AND #tc = :tc',
        names: { '#mc': 'message_count', '#st': 'status', '#tc': 'turn_claim' },
        values: { ':mc': item.message_count, ':st': item.status, ':tc': claim },
      }
    : {
        condition: '#mc = :mc AND #st = :st AND (attribute_not_exists(#tu) OR #tu < :now)',
        names: { '#mc': 'message_count', '#st': 'status', '#tu': 'turn_claim_until' },
        values: { ':mc': item.message_count, ':st': item.status, ':now': Date.now() },
      };

/**
 * Whether a turn claims the chat before it runs: when it can run a tool (the agent selects any), is
 * streamed (every refusal must come before its first event) or continues a kept turn. A turn that can
 * run no tool changes nothing outside its own write, which is conditioned as the claim would be: of
 * two racing turns the second still answers 409 and stores nothing, one write request sooner.
 */
const needsClaim = (agent: Agent, turn: TurnRequest) => (agent.selected_tools ?? []).length > 0 || (agent.handoff_agents ?? []).length > 0 || !!turn.listener || !!turn.resume || !!turn.toolResults;

/** Claims the chat's next turn (see the module comment); 409 while another turn runs or when the chat changed. */
async function claimTurn(item: ChatItem): Promise<string> {
  const claim = uuidv7();
  const now = Date.now();
  try {
    await transact([
      updateExisting(keys.chat(item.organization_id, item.id), { turn_claim: claim, turn_claim_until: now + TURN_CLAIM_MS }, {
        condition: '#mc = :mc AND #st = :st AND (attribute_not_exists(#tu) OR #tu < :now)',
        names: { '#mc': 'message_count', '#st': 'status', '#tu': 'turn_claim_until' },
        values: { ':mc': item.message_count, ':st': item.status, ':now': now },
      }),
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new ConflictError('Another turn of this chat is running (or just changed it); wait for its answer, read the chat, then send again', { id: item.id });
    throw err;
  }
  return claim;
}

/** Gives the claim back when the turn stored nothing (a failure before any tool ran). */
async function releaseClaim(item: ChatItem, claim: string): Promise<void> {
  await transact([
    updateExisting(keys.chat(item.organization_id, item.id), {}, { remove: ['turn_claim', 'turn_claim_until'], condition: '#tc = :tc', names: { '#tc': 'turn_claim' }, values: { ':tc': claim } }),
  ]).catch((err: unknown) => {
    if (!(err instanceof ConditionFailed)) logger.warn('A chat turn\'s claim could not be released; it expires by itself', { chat_id: item.id, error: err as Error });
  });
}

/**
 * The API answer for a model failure: 503 with Retry-After when retrying can cure it (a timeout, 5xx,
 * 429, a connection lost), whose message says when to retry; else 502 with the provider's reason and
 * message. A malformed answer is a 502 too, but a model's next answer can be a good one: its message
 * says to retry, where a refusal (a key, a model, a request the provider rejects) says retrying will not help.
 */
export function modelFailure(err: LlmError | TurnDeadlineError, kept: boolean): Error {
  const next = kept
    ? 'what the turn\'s tools did is kept: send the same message again to continue the turn (its tools do not run again)'
    : 'nothing was kept';
  if (err instanceof LlmError && !isRetryable(err)) {
    const reason = permanentReason(err);
    const said = reason === 'malformed_answer'
      ? `The agent's model answered something that is not a usable reply (${reason}); a model's next answer can be usable: retry, and check the model if it keeps happening`
      : `The agent's model refused the request (${reason}); retrying will not help until it is fixed`;
    return new BadGatewayError(`${said}; ${next}`, {
      reason,
      ...(err.details.status !== undefined ? { provider_status: err.details.status } : {}),
      ...(err.details.providerCode ? { provider_code: err.details.providerCode } : {}),
      provider_message: err.details.providerMessage ?? err.message,
      kept,
    });
  }
  const retryAfter = (err instanceof LlmError ? err.details.retryAfterSeconds : undefined) ?? DEFAULT_RETRY_AFTER_SECONDS;
  const reason = err instanceof LlmError ? err.reason : 'timeout';
  return new UnavailableError(`The agent's model did not answer (${reason}); retry in ${retryAfter} s; ${next}`, { reason, retry_after_seconds: retryAfter, kept }, retryAfter);
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

/** What one turn brings: a user message, the caller's tool results, or the continuation of a kept turn. */
interface TurnRequest {
  userText?: string;
  toolResults?: { tool_call_id: string; name: string; output: unknown }[];
  /** Continuing the chat's incomplete turn (its messages are already stored). */
  resume?: IncompleteTurn;
  /** Streams the turn (stream.ts): told once the chat is claimed, then each message as it comes. */
  listener?: ChatTurnListener;
  /** When the turn's request came in (epoch ms, this process's clock): where its replies' `e2e` starts. */
  receivedMs: number;
  /** Work after the answer, where the invocation offers it (shared/after-answer.ts): a whole answer's final figures are stored there. */
  afterAnswer?: ((task: AnswerTask) => void) | undefined;
}

/**
 * Runs the engine for one claimed turn and stores what it added, releasing the claim; see the
 * module comment. A model failure after platform tools ran stores the turn as incomplete.
 */
async function runAndStore(item: ChatItem, agent: Agent, stored: StoredMessages, turn: TurnRequest): Promise<ChatTurn> {
  const claim = needsClaim(agent, turn) ? await claimTurn(item) : undefined;
  turn.listener?.started();
  try {
    return await runClaimed(item, agent, stored, turn, claim);
  } catch (err) {
    // A turn that stored nothing gives its claim back; one that stored released it in the same write.
    if (!(err instanceof StoredFailure) && claim) await releaseClaim(item, claim);
    throw err instanceof StoredFailure ? err.answer : err;
  }
}

/** A failure answered after the kept turn was stored (its claim released with it). */
class StoredFailure extends Error {
  constructor(readonly answer: Error) {
    super(answer.message);
  }
}

async function runClaimed(item: ChatItem, agent: Agent, stored: StoredMessages, turn: TurnRequest, claim: string | undefined): Promise<ChatTurn> {
  const orgId = item.organization_id;
  const history = stored.messages;
  const deadlineMs = Date.now() + TURN_BUDGET_MS;
  const now = clockNow().toISOString();
  const setup = setupOf(item, agent, now);
  const groundOn = turn.userText ?? turn.resume?.user_text ?? lastUserText(history);
  const timer = new ReplyTimer(turn.receivedMs);
  const [tools, passages] = await Promise.all([
    agentTools(orgId, agent, 'chat'),
    agent.knowledge_base ? timer.rankKnowledgeBase(() => import('../conversations/grounding').then((g) => g.groundingPassages(orgId, agent.knowledge_base, groundOn))) : Promise.resolve([]),
  ]);
  // The agent handling the chat now (its last segment's: a hand-off changes it); tools see it as the conversation's agent.
  const current = currentAgentOf(item);
  const conversation = { ...conversationRef('chat', item, setup.timezone), agent_id: current.agent_id };
  // The hand-off rules load for an agent that lists hand-off agents only (conversations/handoff.ts).
  const handoffs = (agent.handoff_agents ?? []).length
    ? (await import('../conversations/handoff')).handoffSession({
        organization_id: orgId,
        channel: 'chat',
        agent,
        agent_version: current.agent_version,
        segments: segmentsOf(item),
        conversation,
        setup: { contactVariables: item.contact_variables ?? {}, visitorVariables: item.visitor_variables, dynamicVariables: item.dynamic_variables, timezone: item.timezone },
        groundOn,
      })
    : undefined;
  let out: TurnOutput;
  try {
    out = await runTurn({
      llm: llm(),
      model: effectiveModel(agent),
      temperature: agent.temperature,
      system: setup.system,
      tools,
      conversation,
      history: history.map(asConversation),
      ...(turn.userText !== undefined ? { userText: turn.userText } : {}),
      ...(turn.toolResults ? { toolResults: turn.toolResults } : {}),
      passages,
      roundsUsed: turn.toolResults ? item.rounds_used : (turn.resume?.rounds_used ?? 0),
      deadlineMs,
      ...(turn.listener ? { stream: engineStream(turn.listener) } : {}),
      ...(handoffs ? { handoff: handoffs.hook } : {}),
      timer,
    });
  } catch (err) {
    if (err instanceof LlmError || err instanceof TurnDeadlineError) {
      const kept = keptTurnOf(err);
      if (kept && kept.toolsRan > 0) {
        logger.warn('A chat turn failed at the model after its tools ran; the turn is kept', { chat_id: item.id, error: err as Error });
        await storeIncomplete(item, stored, turn, kept, claim, groundOn, handoffs);
        throw new StoredFailure(modelFailure(err, true));
      }
      logger.warn('A chat turn failed at the model; nothing more kept', { chat_id: item.id, error: err as Error });
      throw modelFailure(err, !!turn.resume);
    }
    throw err;
  }
  const at = clockNow().toISOString();
  const { items, views } = messageWrites(orgId, item.id, item.message_count, out.messages, at);
  // A continued turn answers the messages kept from its failed attempt too: the whole turn.
  const keptViews = turn.resume ? history.filter((m) => m.seq >= turn.resume!.from_seq).map(messageView) : [];
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
    incomplete_turn: null,
  };
  const remove: string[] = ['turn_claim', 'turn_claim_until'];
  if (ends) Object.assign(set, { end_reason: 'agent_ended', ended_at: at, ...chatLatency([...history.map(messageView), ...views]) }), remove.push('gsi2pk', 'gsi2sk');
  else Object.assign(set, idleEntry(orgId, item.id, at));
  const next = { ...item, ...set } as ChatItem;
  if (ends) delete next.gsi2pk;
  const events: PlatformEvent[] = [];
  const eventWrites: TransactItem[] = [];
  // Hand-offs: the chain, the agents for the list's handled_by, the final agent's analysis settings, one event each (same write).
  const handoffEventWrites: TransactItem[] = [];
  if (handoffs?.changed) {
    const { handoffEvent } = await import('../conversations/handoff');
    Object.assign(set, handoffWrites(handoffs));
    Object.assign(next, handoffWrites(handoffs));
    for (const sw of out.handoffs) {
      const e = handoffEvent(orgId, handedOff(item), sw, handoffs.segments);
      events.push(e.event);
      handoffEventWrites.push(e.write);
    }
  }
  if (ends) {
    const ended = newEvent(orgId, 'chat.ended', eventData(next, [...history.map(messageView), ...views]));
    events.push(ended.event);
    eventWrites.push(ended.write);
  }
  let placement: TurnPlacement;
  try {
    placement = await storeTurn(item, stored, set, { remove, ...claimed(item, claim) }, items, eventWrites, handoffEventWrites);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new ConflictError('The chat changed while this turn ran (it was ended, or the turn outlived its claim); read it and try again', { id: item.id });
    throw err;
  }
  await afterEnd(next, events);
  // Answered whole, a reply's `e2e` ends with the answer, which waited for the write above: its final
  // figures go in the answer and are stored after it. A turn that ends the chat keeps those of its
  // write: the chat's `latency` and its `chat.ended` event were written with them.
  if (!turn.listener && !ends && turn.afterAnswer) {
    const final = finalFigures(items, views, turn.receivedMs);
    if (final.length) {
      const chatKey = `${orgId}/${item.id}`;
      const written = deferred();
      pendingFigures.set(chatKey, written.promise);
      turn.afterAnswer(() => storeFinalFigures(orgId, item.id, placement, final).finally(() => {
        written.resolve();
        if (pendingFigures.get(chatKey) === written.promise) pendingFigures.delete(chatKey);
      }));
    }
  }
  recordReplies(item.widget_id ? 'widget' : 'chat', views);
  return { chat: { id: item.id, status, end_reason: next.end_reason ?? null, pending_tool_calls: out.pending }, messages: [...keptViews, ...views] };
}

/**
 * Stores a turn whose model failed after its tools ran (see the module comment): its messages
 * (the user's, every tool call with its result), `incomplete_turn`, the usage; the chat stays
 * `active` and the claim is released in the same write.
 */
async function storeIncomplete(item: ChatItem, stored: StoredMessages, turn: TurnRequest, kept: KeptTurn, claim: string | undefined, userText: string, handoffs?: HandoffSession): Promise<void> {
  const orgId = item.organization_id;
  const at = clockNow().toISOString();
  const { items } = messageWrites(orgId, item.id, item.message_count, kept.messages, at);
  const incomplete: IncompleteTurn = { user_text: userText, from_seq: turn.resume?.from_seq ?? item.message_count, rounds_used: kept.roundsUsed };
  const set: Record<string, unknown> = {
    status: 'active',
    gsi1pk: statusPartition(orgId, 'active'),
    pending_tool_calls: [],
    message_count: item.message_count + kept.messages.length,
    user_messages: item.user_messages + (turn.userText !== undefined ? 1 : 0),
    rounds_used: 0,
    incomplete_turn: incomplete,
    usage: {
      llm_requests: item.usage.llm_requests + kept.usage.requests,
      prompt_tokens: item.usage.prompt_tokens + kept.usage.promptTokens,
      completion_tokens: item.usage.completion_tokens + kept.usage.completionTokens,
    },
    last_message_at: at,
    updated_at: at,
    ...idleEntry(orgId, item.id, at),
  };
  // A hand-off the failed turn made stands (its call and result are kept): the next turn is the new agent's.
  const events: PlatformEvent[] = [];
  const eventWrites: TransactItem[] = [];
  if (handoffs?.changed) {
    const { handoffEvent } = await import('../conversations/handoff');
    Object.assign(set, handoffWrites(handoffs));
    for (const sw of kept.handoffs) {
      const e = handoffEvent(orgId, handedOff(item), sw, handoffs.segments);
      events.push(e.event);
      eventWrites.push(e.write);
    }
  }
  try {
    await storeTurn(item, stored, set, { remove: ['turn_claim', 'turn_claim_until'], ...claimed(item, claim) }, items, [], eventWrites);
    await dispatchEvents(events);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new StoredFailure(new ConflictError('The chat changed while this turn ran (it was ended, or the turn outlived its claim); its tools ran but their results could not be kept', { id: item.id }));
    throw err;
  }
}

/** What a chat's hand-offs write on it: the chain, the agents that handled it, the final agent's analysis settings. */
function handoffWrites(handoffs: HandoffSession): Record<string, unknown> {
  const final = handoffs.current.agent;
  return {
    segments: handoffs.segments,
    handled_by: handledAgentIds(handoffs.segments),
    analysis_model: final.post_call_analysis_model || null,
    analysis_prompt: final.analysis_summary_prompt || null,
  };
}

/** The chat as a `conversation.handed_off` event names it. */
const handedOff = (item: ChatItem) => ({ type: 'chat' as const, id: item.id, channel: item.channel, agent_id: item.agent_id, agent_version: item.agent_version ?? null });

/**
 * The agent of each chat on a draft this container served, by `<org>/<chat>` (a chat's agent never
 * changes): its next turn reads the agent with the chat, in one BatchGetItem, instead of after it.
 * The agent itself is always read, so an edit to the draft applies at the next turn.
 */
const draftChatAgents = new Map<string, string>();
const MAX_DRAFT_CHAT_AGENTS = 2_000;

/**
 * The final figures of replies answered whole, on their way to the store after the answer, by
 * `<org>/<chat>`: the chat's next turn in this container reads it only once they are written, so
 * the copy of the messages it carries on holds them (store.ts `storeFinalFigures`).
 */
const pendingFigures = new Map<string, Promise<void>>();
/** How long a turn waits for the previous one's figures (an answer whose work after it never ran must not hold a chat). */
const PENDING_FIGURES_WAIT_MS = 1_000;

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

/**
 * A whole answer's replies with `e2e` taken now, the answer ready (after the turn's write): each
 * reply view and its stored item get the new `e2e`, and `platform` what the other members leave of it.
 */
function finalFigures(items: MessageItem[], views: ChatMessage[], receivedMs: number): FinalFigures[] {
  const e2e = Math.round(Date.now() - receivedMs);
  const out: FinalFigures[] = [];
  views.forEach((view, i) => {
    const was = view.latency_ms;
    if (!was || e2e <= was.e2e) return;
    const latency = { ...was, e2e, platform: e2e - was.model - was.tools - was.knowledge_base };
    view.latency_ms = latency;
    // The item may be this container's copy of a filed message (store.ts `keepFiledCopy`).
    (items[i] as { latency_ms?: unknown }).latency_ms = latency;
    out.push({ seq: items[i]!.seq, id: view.id, latency_ms: latency });
  });
  return out;
}

/** The chat and its messages, and the agent of a chat on a draft this container knows, read at once. */
async function readTurn(orgId: string, chatId: string): Promise<{ item: ChatItem; stored: StoredMessages; agent: Promise<Agent> }> {
  const key = `${orgId}/${chatId}`;
  const pending = pendingFigures.get(key);
  if (pending) {
    await Promise.race([pending, new Promise((r) => setTimeout(r, PENDING_FIGURES_WAIT_MS).unref())]);
    // Waited once: work after an answer that never ran (its answer failed) holds no later turn.
    if (pendingFigures.get(key) === pending) pendingFigures.delete(key);
  }
  const knownAgent = draftChatAgents.get(key);
  // The agent of a chat this container knows is read in the chat's own request (one BatchGetItem).
  const loaded = knownAgent ? await loadChat<Agent>(orgId, chatId, keys.agent(orgId, knownAgent)) : await loadChat(orgId, chatId);
  const { item, messages, unfiled } = loaded;
  const early = knownAgent && 'beside' in loaded ? Promise.resolve(loaded.beside as Agent | undefined) : undefined;
  // The agent handling the chat now (a hand-off changes it).
  const current = currentAgentOf(item);
  if (typeof current.agent_version !== 'number') {
    draftChatAgents.delete(key);
    draftChatAgents.set(key, current.agent_id);
    if (draftChatAgents.size > MAX_DRAFT_CHAT_AGENTS) draftChatAgents.delete(draftChatAgents.keys().next().value!);
  }
  const agent = agentFor(item, knownAgent === current.agent_id ? early : undefined);
  agent.catch(() => undefined); // the caller awaits it after its own refusals
  return { item, stored: { messages, unfiled }, agent };
}

async function agentFor(item: ChatItem, read?: Promise<Agent | undefined>): Promise<Agent> {
  const { agent_id: agentId, agent_version: version } = currentAgentOf(item);
  // A chat on a published version reads no agent: the version is immutable and kept in memory (agents/versions.ts).
  if (typeof version === 'number') return agentOfConversation(item.organization_id, agentId, version);
  const agent = await (read ?? findAgent(item.organization_id, agentId));
  if (!agent) throw new UnprocessableError('The chat\'s agent has been deleted; start a chat with another agent', { agent_id: agentId });
  if (!isActive(agent)) throw new UnprocessableError('The chat\'s agent is inactive', { agent_id: agentId });
  return agent;
}

/** How a turn was asked for: streamed (`listener`), answered whole with work after the answer (`afterAnswer`), and when it came in (`receivedMs`: the function received it; now by default). */
export type TurnOptions = Partial<Pick<TurnRequest, 'listener' | 'afterAnswer' | 'receivedMs'>>;

/**
 * One user message: a turn. 409 when the chat has ended, waits for tool results, or another turn won the race.
 * With a `listener` the turn streams (stream.ts): every refusal comes before `listener.started()`.
 */
export async function sendMessage(orgId: string, chatId: string, content: string, { listener, afterAnswer, receivedMs = Date.now() }: TurnOptions = {}): Promise<ChatTurn> {
  const { item, stored, agent: agentRead } = await readTurn(orgId, chatId);
  const refused = refusal(item);
  if (refused) throw new ConflictError(refused, { id: chatId, status: item.status });
  const incomplete = item.incomplete_turn ?? undefined;
  const resume = incomplete && incomplete.user_text.trim() === content.trim() ? incomplete : undefined;
  if (!resume && item.user_messages >= MAX_USER_MESSAGES) {
    await endChatItem(item, 'max_turns', stored.messages.map(messageView));
    throw new ConflictError(`The chat reached ${MAX_USER_MESSAGES} user messages and has ended (max_turns)`, { id: chatId, status: 'ended' });
  }
  const agent = await agentRead;
  return runAndStore(item, agent, stored, resume ? { resume, listener, receivedMs, afterAnswer } : { userText: content, listener, receivedMs, afterAnswer });
}

/** The caller's answers to every pending `function` tool call; the turn goes on. */
export async function submitToolResults(orgId: string, chatId: string, results: { tool_call_id: string; output: unknown }[], { listener, afterAnswer, receivedMs = Date.now() }: TurnOptions = {}): Promise<ChatTurn> {
  const { item, stored, agent: agentRead } = await readTurn(orgId, chatId);
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
  const agent = await agentRead;
  return runAndStore(item, agent, stored, { toolResults: results.map((r) => ({ tool_call_id: r.tool_call_id, name: pending.get(r.tool_call_id)!.name, output: r.output })), listener, receivedMs, afterAnswer });
}


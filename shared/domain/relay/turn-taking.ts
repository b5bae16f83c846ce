import { llm } from '../../adapters/llm';
import { LlmError } from '../../adapters/llm/port';
import { clockMs } from '../../clock';
import type { TransactItem } from '../../db/store';
import { logger } from '../../logger';
import { recordReply } from '../../telemetry/metrics';
import { inStoredTrace, SpanKind } from '../../telemetry/tracing';
import { executeToolOnDemand, keptTurnOf, runTurn, TurnDeadlineError, type ConversationMessage, type TurnOutput } from '../conversations/engine';
import { groundingPassages } from '../conversations/grounding';
import { ReplyTimer, type ReplyLatency } from '../conversations/latency';
import type { executeTool } from '../conversations/tools/executor';
import type { CallToolCalls, Transcript } from '../calls/schemas';
import { endSession, capOf, RELAY_TIME_UP, transferHandoff } from './call-ending';
import { cutReply } from './interruption';
import { cancellable, Reply, ReplyCancelled, send, signalReplies } from './reply';
import { changeRelayState, claimTurn, knownRelayState, rememberHistory, type RelayState } from './state';
import { digitsOf, PRESS_DIGITS_TOOL, relayTools } from './tool-calls';
import { HISTORY_MESSAGES, readHistory, readTurn, turnRewrite, turnSeq, turnWrite } from './turns';
import { afterTurn, tellWritten } from './turn-wait';
import { relayHandoffSession, settleRelayHandoffs } from './handoff';

/**
 * Turn-taking: each finished utterance (a `prompt` with `last`, a keypress) is one turn, one reply
 * at a time. The turn claims itself and reads the state in one request; a newer utterance
 * supersedes a turn still running (its reply stops, its model request is aborted, what was said
 * stays in the transcript, marked interrupted) and starts once that turn is written, as Twilio's
 * own SDK cancels the running reply. Meanwhile, when this process knows the connection's state
 * and history, the model is asked from them at once: the claim's answer tells whether that state
 * was still the current one, else that start is dropped (nothing sent, no tool run).
 */

/** Each turn's budget: the model and the tools together (well inside the function's 29 s). */
export const RELAY_TURN_BUDGET_MS = 20_000;
/** What the caller hears when the model fails a turn (the call goes on). */
export const RELAY_APOLOGY = 'Sorry, I could not answer that just now. Could you say it again?';

/** A turn started from a state that was not the current one: dropped before it said or did anything. */
class Abandoned extends Error {}

/** One caller utterance (or keypress): `userText` is the model's, `spoken` the transcript's. */
export async function utterance(connectionId: string, userText: string, spoken: string): Promise<void> {
  const atMs = clockMs();
  // The end of the caller's turn on this process's clock (the final prompt received): where the reply's e2e starts.
  const receivedMs = Date.now();
  const seen = knownRelayState(connectionId);
  const claiming = claimTurn(connectionId);
  // A reply still running in this process stops now; elsewhere its poll sees the claim.
  signalReplies(connectionId, { kind: 'supersede', before: Number.MAX_SAFE_INTEGER });
  const s = seen?.state;
  if (s && seen.history && s.turn_done === s.turn && !s.ending && !capOf(s, atMs)) {
    const current = claiming.then((c) => !!c && c.turn === s.turn + 1 && c.version === (s.version ?? 0) + 1, () => false);
    const reply = new Reply(s, s.turn + 1, current);
    const started = respond(s, seen.history, s.turn + 1, reply, userText, spoken, atMs, receivedMs).then(
      () => true,
      (err) => {
        if (err instanceof Abandoned) return false;
        throw err;
      },
    );
    if (await current) {
      await started;
      return;
    }
    started.catch((err) => !(err instanceof Abandoned) && logger.warn('A dropped relay turn start failed', { connection_id: connectionId, error: err as Error }));
  }
  const claimed = await claiming;
  if (!claimed) return;
  const myTurn = claimed.turn;
  const state = await afterTurn(claimed, myTurn - 1);
  if (!state) return;
  const cap = capOf(state, atMs);
  if (state.ending || cap === 'max-duration') {
    if (!state.ending && cap) return sayGoodbye(state, myTurn, spoken, atMs);
    await changeRelayState(connectionId, (x) => ({ set: { turn_done: Math.max(x.turn_done, myTurn) } })).catch((err) => logger.warn('A relay turn could not be marked done', { connection_id: connectionId, error: err as Error }));
    tellWritten(connectionId);
    return;
  }
  const history = knownRelayState(connectionId)?.state.version === state.version && knownRelayState(connectionId)?.history ? knownRelayState(connectionId)!.history! : (await readHistory(state.call_id)).messages;
  // Near API Gateway's 2-hour limit the turn is answered, then the session ends for a new one (the action reconnects).
  await respond(state, history, myTurn, new Reply(state, myTurn), userText, spoken, atMs, receivedMs, cap === 'reconnect');
}

const secondsOf = (state: RelayState, ms: number) => Math.max(0, Math.round((ms - state.started_ms) / 100) / 10);

/** The call's time is up: the caller hears the goodbye, the turn is written and the session ends (the `<Connect action>` hangs up). */
async function sayGoodbye(state: RelayState, myTurn: number, spoken: string, atMs: number): Promise<void> {
  const reply = new Reply(state, myTurn);
  reply.push(RELAY_TIME_UP);
  await reply.finish();
  await finishTurn(state, myTurn, reply, { spoken, atMs, messages: [{ role: 'user', content: spoken }, { role: 'agent', content: RELAY_TIME_UP }], tools: [], ending: { reason: 'max-duration' } });
  await endSession(state, { reasonCode: 'max-duration' });
}

/** The turn itself: the engine with the model streaming into `reply`, tools gated on the claim, then the write. */
function respond(state: RelayState, history: ConversationMessage[], myTurn: number, reply: Reply, userText: string, spoken: string, atMs: number, receivedMs: number, reconnectAfter = false): Promise<void> {
  // One span per turn, in the call's trace (the TwiML's traceparent, kept in the state at `setup`).
  return inStoredTrace('relay turn', state.trace_parent, { kind: SpanKind.SERVER, attributes: { 'conversation.type': 'call', 'gen_ai.conversation.id': state.call_id, 'relay.turn': myTurn } }, () =>
    respondTurn(state, history, myTurn, reply, userText, spoken, atMs, receivedMs, reconnectAfter),
  );
}

async function respondTurn(state: RelayState, history: ConversationMessage[], myTurn: number, reply: Reply, userText: string, spoken: string, atMs: number, receivedMs: number, reconnectAfter: boolean): Promise<void> {
  const timer = new ReplyTimer(receivedMs);
  // No tool runs before the claim held (a dropped start must not have acted on the world).
  const gatedTool: typeof executeTool = async (...args) => {
    if (!(await reply.ready())) throw new Abandoned();
    return executeToolOnDemand(...args);
  };
  const added: ConversationMessage[] = [];
  const toolsRun: CallToolCalls = [];
  let out: TurnOutput | undefined;
  let failed = false;
  // Agent-to-agent hand-off (relay/handoff.ts): the switches this turn made, written with it.
  const handoffs = await relayHandoffSession(state, userText);
  const switches: TurnOutput['handoffs'] = [];
  try {
    const [tools, passages] = await Promise.all([
      relayTools(state),
      state.agent.knowledge_base ? timer.rankKnowledgeBase(() => groundingPassages(state.organization_id, state.agent.knowledge_base!, userText).catch(() => [])) : Promise.resolve([]),
    ]);
    const deadlineMs = Date.now() + RELAY_TURN_BUDGET_MS;
    const stream = { onDelta: (delta: string, messageId: string) => reply.push(delta, messageId) };
    const base = { llm: cancellable(llm(), reply.abort.signal), model: state.agent.model, temperature: state.agent.temperature, system: state.system, tools, conversation: state.conversation, passages, deadlineMs, stream, executeTool: gatedTool, timer, ...(handoffs ? { handoff: handoffs.hook } : {}) };
    out = await runTurn({ ...base, history, userText });
    added.push(...out.messages);
    switches.push(...out.handoffs);
    // press_digits is answered here (the engine stops at it as at any caller-answered tool): the tones go out, the turn goes on.
    for (let rounds = 0; out.pending.length && rounds < 5; rounds++) {
      if (!(await reply.ready())) throw new Abandoned();
      const results = [];
      for (const p of out.pending) {
        const digits = digitsOf(p);
        const ok = digits !== undefined && (await send(state, { type: 'sendDigits', digits })) === 'sent';
        const result = ok ? { pressed: digits } : { error: p.name === PRESS_DIGITS_TOOL ? 'digits must be 0-9, * , # or w' : `${p.name} cannot run on a call` };
        results.push({ tool_call_id: p.id, name: p.name, output: result });
        toolsRun.push({ name: p.name, arguments: p.arguments, result: result as never, time_sec: secondsOf(state, clockMs()) });
      }
      const now = switches.at(-1);
      out = await runTurn({ ...base, ...(now ? { system: now.system, tools: now.tools, model: now.model, temperature: now.temperature, passages: now.passages, conversation: now.conversation } : {}), history: [...history, ...added], toolResults: results, roundsUsed: out.roundsUsed });
      added.push(...out.messages);
      switches.push(...out.handoffs);
    }
  } catch (err) {
    if (err instanceof Abandoned || !(await reply.ready())) {
      reply.stop('abandoned');
      await reply.finish();
      throw new Abandoned();
    }
    if (!(err instanceof LlmError) && !(err instanceof TurnDeadlineError)) {
      reply.stop('failed');
      await reply.finish();
      throw err;
    }
    // What the turn did before it stopped (whole tool rounds) is kept.
    added.push(...(keptTurnOf(err)?.messages ?? []).filter((m) => m.role !== 'agent'));
    if (!(err instanceof ReplyCancelled) && !reply.stopped) {
      logger.warn('The model failed a relay turn; the caller hears an apology', { call_id: state.call_id, error: err as Error });
      failed = true;
      reply.push(RELAY_APOLOGY, 'apology'); // after what the caller heard, in the same reply
    }
  }
  await reply.finish();
  if (reply.stopped === 'abandoned') throw new Abandoned();
  if (!added.length || added[0]!.role !== 'user') added.unshift({ role: 'user', content: userText });
  if (reply.stopped) {
    // A stopped reply is what went out: the model's history and the transcript keep that, not the rest.
    for (let i = added.length - 1; i >= 0; i--) if (added[i]!.role === 'agent') added.splice(i, 1);
    if (reply.sent.trim()) added.push({ role: 'agent', content: reply.sent.trim() });
  } else if (failed) added.push({ role: 'agent', content: RELAY_APOLOGY });
  for (const m of added) {
    if (m.role !== 'tool_call' || m.name === PRESS_DIGITS_TOOL) continue; // press_digits is recorded as it runs
    const answer = added.find((r) => r.role === 'tool_result' && r.tool_call_id === m.tool_call_id);
    toolsRun.push({ name: m.name ?? '', arguments: m.arguments ?? {}, result: (answer?.result ?? null) as never, time_sec: secondsOf(state, atMs) });
  }
  const effect = out && !reply.stopped ? out.effect : {};
  const warm = effect.transferMode === 'warm' ? { mode: 'warm' as const, ...(effect.transferDescription ? { description: effect.transferDescription } : {}), ...(effect.transferReason ? { transfer_reason: effect.transferReason } : {}) } : {};
  const ending: RelayState['ending'] = effect.transferTo ? { reason: 'transfer', to: effect.transferTo, ...warm } : effect.end ? { reason: 'end-call' } : reconnectAfter ? { reason: 'reconnect' } : undefined;
  const switched = handoffs && switches.length ? await settleRelayHandoffs(state, handoffs, switches) : undefined;
  const wrote = await finishTurn(state, myTurn, reply, { spoken, atMs, receivedMs, messages: added, tools: toolsRun, ending, ...(switched ? { switched } : {}) }, history);
  if (reply.stopped === 'gone') return;
  // After the write: Twilio ends the session on `end`, and what follows (the action) reads the call.
  if (wrote && ending) await endSession(wrote, ending.reason === 'transfer' ? transferHandoff(ending) : { reasonCode: ending.reason });
}

/**
 * The turn's reply's figures: the engine's for its first reply (model, tools and knowledge base
 * before its first token), `e2e` ending when its first token went out on the socket (after the
 * turn's claim), the difference the platform's. None for a reply that is not the model's (an
 * apology, the goodbye) or never went out.
 */
function replyLatency(rec: TurnRecord, reply: Reply): ReplyLatency | undefined {
  const first = rec.messages.find((m) => m.role === 'agent' && m.latency_ms)?.latency_ms;
  if (!first || rec.receivedMs === undefined || reply.firstSentMs === undefined) return undefined;
  const e2e = Math.max(first.e2e, Math.round(reply.firstSentMs - rec.receivedMs));
  return { ...first, e2e, platform: e2e - first.model - first.tools - first.knowledge_base };
}

interface TurnRecord {
  spoken: string;
  atMs: number;
  /** The final prompt received, on this process's clock (the reply's e2e starts there); absent: the reply is not timed. */
  receivedMs?: number;
  messages: ConversationMessage[];
  tools: CallToolCalls;
  ending?: RelayState['ending'];
  /** A hand-off's change of the agent (relay/handoff.ts). */
  switched?: Partial<RelayState>;
}

/**
 * Writes the turn as an item of its own with the state's change (one transaction; the call item is
 * not touched: it gets the transcript when the session ends, turns.ts). An interruption that came
 * while it was in flight cuts this reply when the words heard are the start of what it sent, else
 * the reply before it (still playing when the caller spoke), whose item is rewritten in the same
 * transaction.
 */
async function finishTurn(state: RelayState, turn: number, reply: Reply, rec: TurnRecord, history?: ConversationMessage[]): Promise<RelayState | undefined> {
  const seq = turnSeq(state, turn);
  const agentText = (reply.stopped ? reply.sent : reply.text).trim();
  const lines: Transcript = [{ role: 'user', text: rec.spoken, time_sec: secondsOf(state, rec.atMs) }];
  // Cut short: by the caller (interrupted, or a newer prompt), or by the socket going (`gone`: a dropped session resumes in a new one, action.ts).
  const cutShort = reply.stopped === 'interrupted' || reply.stopped === 'superseded' || reply.stopped === 'gone';
  const latency = replyLatency(rec, reply);
  if (agentText && latency) recordReply('relay', latency.e2e);
  if (agentText) lines.push({ role: 'agent', text: agentText, time_sec: secondsOf(state, reply.firstMs ?? clockMs()), ...(cutShort ? { interrupted: true } : {}), ...(latency ? { latency_ms: latency } : {}) });
  let rewroteBefore = false;
  let mine: { messages: ConversationMessage[]; lines: Transcript } = { messages: rec.messages, lines };
  const wrote = await changeRelayState(state.connection_id, async (s) => {
    const pending = s.pending_interrupt && s.pending_interrupt.turn === turn ? s.pending_interrupt : undefined;
    const owned = !!pending && !!agentText && reply.owns(pending.heard);
    mine = owned ? cutReply({ messages: rec.messages, lines }, pending!.heard) : { messages: rec.messages, lines };
    const also: TransactItem[] = [];
    rewroteBefore = false;
    if (pending && !owned && s.last_turn) {
      const before = await readTurn(s.call_id, s.last_turn);
      if (before) {
        also.push(turnRewrite(s, before, cutReply(before, pending.heard)));
        rewroteBefore = true;
      }
    }
    also.push(turnWrite(s, { seq, turn, messages: mine.messages, lines: mine.lines, tool_calls: rec.tools }));
    return {
      // A turn written late (one that outlived the wait of the turn after it) never moves last_turn back.
      set: { turn_done: Math.max(s.turn_done, turn), last_turn: s.last_turn && s.last_turn > seq ? s.last_turn : seq, ...(rec.ending ? { ending: rec.ending } : {}), ...(rec.switched ?? {}) },
      remove: pending ? ['pending_interrupt'] : [],
      also,
    };
  });
  // The history after this turn, as this process knows it: the next turn here may start from it at once
  // (not when this write cut the turn before: the next turn reads it).
  if (wrote && history && !rewroteBefore) rememberHistory(wrote, [...history, ...mine.messages].slice(-HISTORY_MESSAGES));
  tellWritten(state.connection_id);
  return wrote;
}

/** An interruption: with a turn in flight it waits for that turn's write (settled there); with none the last written reply is cut now. */
export async function interruption(connectionId: string, heard: string): Promise<void> {
  let pendingFor: number | undefined;
  await changeRelayState(connectionId, async (s) => {
    pendingFor = undefined;
    if (s.turn_done < s.turn) {
      pendingFor = s.turn_done + 1;
      return { set: { pending_interrupt: { turn: pendingFor, heard } } };
    }
    if (!s.last_turn) return undefined;
    const last = await readTurn(s.call_id, s.last_turn);
    if (!last) return undefined;
    return { set: {}, also: [turnRewrite(s, last, cutReply(last, heard))] };
  });
  // The turn still speaking stops at once when it runs in this process; elsewhere it finds the interruption by reading.
  if (pendingFor !== undefined) signalReplies(connectionId, { kind: 'interrupt', turn: pendingFor, heard });
}

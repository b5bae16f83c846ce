import { llm } from '../../adapters/llm';
import { LlmError } from '../../adapters/llm/port';
import { relayConnections } from '../../adapters/relay-connections';
import { verifyToken } from '../../adapters/signed-token';
import { telephony } from '../../adapters/telephony';
import { clockMs, clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import { effectiveModel } from '../agents/models';
import { findAgent } from '../agents/service';
import type { CallItem } from '../calls/service';
import { openVoiceSession, recordConversation } from '../calls/voice-session';
import { STREAM_PARAMETERS } from '../calls/voice-stream';
import type { Contact } from '../contacts/schemas';
import { runTurn, TurnDeadlineError, type ConversationMessage, type TurnOutput } from '../conversations/engine';
import { groundingPassages } from '../conversations/grounding';
import { toolsForAgent, type RunnableTool } from '../conversations/tools/catalog';
import { conversationRef } from '../conversations/types';
import { conversationSetup, loadConversationTimezone } from '../conversations/variables';
import { DIGITS, parseRelayMessage, type RelayOutbound, type SetupMessage } from './protocol';
import { changeRelayState, createRelayState, deleteRelayState, readRelayState, type RelayAgent, type RelayState } from './state';
import { isRelayAgent } from './twiml';

/**
 * The relay's side of a ConversationRelay call (docs/api.md, "Two voice pipelines"): `$connect`
 * admits a connection with the call's one-use token; each `prompt` (its `last` one) runs one turn
 * of the chat engine with the agent's model, tools, knowledge base and variables, and the reply
 * goes back as `text` tokens; `interrupt` keeps only the words the caller heard; `dtmf` reaches
 * the model as the caller's keypress; `end_call` and `transfer_call` send `end`; `$disconnect`
 * writes the conversation to the call through the calls service, as the voice runtime does.
 */

/** Each turn's budget: the model and the tools together (well inside the function's 30 s). */
export const RELAY_TURN_BUDGET_MS = 20_000;
/** What the caller hears when the model fails a turn (the call goes on). */
export const RELAY_APOLOGY = 'Sorry, I could not answer that just now. Could you say it again?';
/** What the caller hears when the agent's maximum call duration is reached, before the end. */
export const RELAY_TIME_UP = 'I am sorry, we have reached the time limit for this call. Goodbye.';
/** The built-in a relay call offers when the agent's `ivr_options` is on: the agent presses keys on a phone menu. */
export const PRESS_DIGITS_TOOL = 'press_digits';

export type ConnectAnswer = { admitted: true } | { admitted: false; status: 401 | 403 | 410; reason: string };

/** `$connect`: admits the connection only with a valid, unused token of a live call of a `relay` agent. */
export async function connectRelay(connectionId: string, token: string | undefined): Promise<ConnectAnswer> {
  const claims = token ? await verifyToken('voice-stream', token) : null;
  if (!claims?.organization_id || !claims.call_id) return { admitted: false, status: 401, reason: 'invalid or expired relay token' };
  const orgId = claims.organization_id;
  const call = await getItem<CallItem>(keys.call(orgId, claims.call_id));
  if (!call) return { admitted: false, status: 403, reason: 'unknown call' };
  if (call.status === 'ended') return { admitted: false, status: 410, reason: 'the call has ended' };
  const [agent, contact] = await Promise.all([
    findAgent(orgId, call.agent_id),
    call.contact_id ? getItem<Contact>(keys.contact(orgId, call.contact_id)) : Promise.resolve(undefined),
  ]);
  if (!agent || !isRelayAgent(agent)) return { admitted: false, status: 403, reason: 'the call\'s agent does not use the relay' };
  // One connection per token, ever (the same marker as a media stream's: a conditional write).
  const admission = await openVoiceSession(orgId, call.id, token!);
  if (admission !== 'admitted') return { admitted: false, status: admission === 'token_used' ? 403 : 410, reason: admission === 'token_used' ? 'the relay token was already used' : 'the call has ended' };
  const timezone = await loadConversationTimezone(orgId, agent.id, contact);
  const setup = conversationSetup({ agent, contact, dynamicVariables: call.dynamic_variables ?? {}, beginMessage: call.begin_message ?? agent.begin_message ?? '', timezone, now: clockNow() });
  const startSpeaker = agent.start_speaker === 'user' ? 'user' : 'agent';
  // ConversationRelay speaks the welcome greeting itself: it is the agent's first turn.
  const greeting = startSpeaker === 'agent' ? setup.beginMessage : '';
  const ivr = agent.ivr_options && (agent.ivr_options as Record<string, unknown>).enabled !== false ? { goal: String((agent.ivr_options as Record<string, unknown>).goal ?? '').slice(0, 1000) } : null;
  const relayAgent: RelayAgent = {
    model: effectiveModel(agent),
    temperature: agent.temperature ?? 0.7,
    knowledge_base: agent.knowledge_base || null,
    selected_tools: (agent.selected_tools ?? []) as Record<string, unknown>[],
    max_call_duration_ms: agent.max_call_duration_ms ?? 0,
    ring_duration_ms: agent.ring_duration_ms ?? 30_000,
    ivr,
    start_speaker: startSpeaker,
  };
  await createRelayState({
    connection_id: connectionId,
    organization_id: orgId,
    call_id: call.id,
    agent_id: call.agent_id,
    connected_at_ms: clockMs(),
    ...(call.provider_call_id ? { call_sid: call.provider_call_id } : {}),
    agent: relayAgent,
    system: setup.system + (ivr ? ivrInstructions(ivr.goal) : ''),
    conversation: conversationRef('call', call, setup.timezone),
    messages: greeting ? [{ role: 'agent', content: greeting }] : [],
    transcript: greeting ? [{ role: 'agent', text: greeting, time_sec: 0 }] : [],
    tool_calls: [],
    turn: 0,
    turn_done: 0,
  });
  return { admitted: true };
}

const ivrInstructions = (goal: string) =>
  `\n\nIf you reach an automated phone menu, choose options with the ${PRESS_DIGITS_TOOL} tool instead of speaking${goal ? `; your goal there: ${goal}` : ''}.`;

/** `$default`: one message of the connection. A message the relay cannot read is logged and dropped (Twilio's own errors are logged). */
export async function relayMessage(connectionId: string, body: string | undefined): Promise<void> {
  const parsed = parseRelayMessage(body);
  if ('problem' in parsed) {
    logger.warn('A ConversationRelay message was dropped', { connection_id: connectionId, problem: parsed.problem });
    return;
  }
  const message = parsed.message;
  const state = await readRelayState(connectionId);
  if (!state) return;
  switch (message.type) {
    case 'setup':
      return setUp(state, message);
    case 'prompt':
      if (message.last === false) return; // a partial transcript: the final one follows
      return utterance(state, message.voicePrompt, message.voicePrompt);
    case 'dtmf':
      return utterance(state, `The caller pressed ${message.digit} on their keypad.`, `(pressed ${message.digit})`);
    case 'interrupt':
      await changeRelayState(connectionId, (s) => interruption(s, message.utteranceUntilInterrupt), state);
      return;
    case 'error':
      logger.warn('ConversationRelay reported an error', { call_id: state.call_id, description: message.description });
      return;
    default:
      return;
  }
}

/** `setup`: the session's call must be the token's (a token replayed on another call is closed). */
async function setUp(state: RelayState, setup: SetupMessage): Promise<void> {
  const params = setup.customParameters ?? {};
  const mismatch =
    (params[STREAM_PARAMETERS.callId] !== undefined && params[STREAM_PARAMETERS.callId] !== state.call_id) ||
    (params[STREAM_PARAMETERS.organizationId] !== undefined && params[STREAM_PARAMETERS.organizationId] !== state.organization_id) ||
    (state.call_sid && setup.callSid && setup.callSid !== state.call_sid);
  if (mismatch) {
    logger.warn('A relay connection\'s setup names another call: closed', { call_id: state.call_id });
    await relayConnections().close(state.connection_id);
    return;
  }
  await changeRelayState(state.connection_id, () => ({ set_up: true, ...(setup.callSid ? { call_sid: setup.callSid } : {}) }), state);
}

/** The caller cut the agent off: the turn in flight keeps it for its write; a written turn is cut now. */
function interruption(s: RelayState, heard: string): Partial<RelayState> {
  if (s.turn_done < s.turn) return { pending_interrupt: { turn: s.turn, heard } };
  return cutLastAgentTurn(s.messages, s.transcript, heard);
}

function cutLastAgentTurn(messages: ConversationMessage[], transcript: RelayState['transcript'], heard: string): Pick<RelayState, 'messages' | 'transcript'> {
  const text = heard.trim();
  const m = [...messages];
  const t = [...transcript];
  const mi = m.findLastIndex((x) => x.role === 'agent' && x.content);
  const ti = t.findLastIndex((x) => x.role === 'agent');
  if (mi >= 0) m[mi] = { ...m[mi]!, content: text };
  if (ti >= 0) {
    if (text) t[ti] = { ...t[ti]!, text, interrupted: true };
    else t.splice(ti, 1); // nothing was heard: no turn
  }
  return { messages: m, transcript: t };
}

/** Tools of each connection, read once per process (a warm function keeps them for the call). */
const toolCache = new Map<string, Promise<RunnableTool[]>>();

function relayTools(state: RelayState): Promise<RunnableTool[]> {
  let tools = toolCache.get(state.connection_id);
  if (!tools) {
    tools = toolsForAgent(state.organization_id, state.agent.selected_tools, 'call').then((list) =>
      state.agent.ivr
        ? [
            ...list,
            {
              kind: 'function',
              name: PRESS_DIGITS_TOOL,
              description: 'Press keys on the automated phone menu you reached (ConversationRelay sends them as tones). digits: 0-9, * and #; w waits half a second.',
              parameters: { type: 'object', properties: { digits: { type: 'string', description: 'The keys to press, e.g. "2" or "1w3#"' } }, required: ['digits'] },
              selection: {},
            } satisfies RunnableTool,
          ]
        : list,
    );
    tools.catch(() => toolCache.delete(state.connection_id));
    toolCache.set(state.connection_id, tools);
  }
  return tools;
}

const send = (state: RelayState, message: RelayOutbound) => relayConnections().send(state.connection_id, message);

/**
 * Sends one reply as `text` tokens, `last: false` each, then `last: true`; resolves with when the
 * first token went out (ms), or undefined when nothing was said.
 *
 * STREAMING SEAM: `tokens` is any async iterable. Today the finished turn's text is split per word
 * (`wordsOf`); the provider streaming (shared/adapters/llm, `stream: true`) plugs in by passing the
 * model's token stream here instead, in `speakTurn` below.
 */
export async function sendReply(state: RelayState, tokens: AsyncIterable<string>, ready?: Promise<unknown>): Promise<number | undefined> {
  let first: number | undefined;
  for await (const token of tokens) {
    if (!token) continue;
    if (first === undefined) {
      await ready; // the turn's claim is written before the caller can interrupt it
      first = clockMs();
    }
    if (!(await send(state, { type: 'text', token, last: false }))) return first;
  }
  if (first !== undefined) await send(state, { type: 'text', token: '', last: true });
  return first;
}

/** A reply's words as tokens (each with its following space), as a model's stream would give them. */
export async function* wordsOf(text: string): AsyncIterable<string> {
  for (const word of text.match(/\S+\s*/g) ?? []) yield word;
}

/** One caller utterance (or keypress): a turn of the engine, its reply spoken, the state written. */
async function utterance(read: RelayState, userText: string, spoken: string): Promise<void> {
  const state = await afterTurnInFlight(read);
  if (!state || state.ending) return;
  const atMs = clockMs();
  const seconds = (ms: number) => Math.max(0, Math.round((ms - state.connected_at_ms) / 100) / 10);
  // The turn is claimed (turn + 1) while the model works; the first token waits for the claim.
  let myTurn = 0;
  const claim = changeRelayState(state.connection_id, (s) => {
    myTurn = s.turn + 1;
    return { turn: s.turn + 1 };
  }, state);

  const max = state.agent.max_call_duration_ms;
  if (max > 0 && atMs - state.connected_at_ms >= max) {
    const first = await sendReply(state, wordsOf(RELAY_TIME_UP), claim);
    await finishTurn(state, () => myTurn, { user: { text: spoken, atMs }, messages: [{ role: 'user', content: userText }, { role: 'agent', content: RELAY_TIME_UP }], agentText: RELAY_TIME_UP, firstMs: first, tools: [], ending: {} }, seconds);
    await send(state, { type: 'end', handoffData: JSON.stringify({ reasonCode: 'max-duration' }) });
    return;
  }

  const [tools, passages] = await Promise.all([
    relayTools(state),
    state.agent.knowledge_base ? groundingPassages(state.organization_id, state.agent.knowledge_base, userText).catch(() => []) : Promise.resolve([]),
  ]);
  const deadlineMs = Date.now() + RELAY_TURN_BUDGET_MS;
  const added: ConversationMessage[] = [];
  const toolsRun: RelayState['tool_calls'] = [];
  let out: TurnOutput | undefined;
  let failed = false;
  try {
    const base = { llm: llm(), model: state.agent.model, temperature: state.agent.temperature, system: state.system, tools, conversation: state.conversation, passages, deadlineMs };
    out = await runTurn({ ...base, history: state.messages, userText });
    added.push(...out.messages);
    // press_digits is answered here (the engine stops at it as at any caller-answered tool): the tones go out, the turn goes on.
    for (let rounds = 0; out.pending.length && rounds < 5; rounds++) {
      const results = [];
      for (const p of out.pending) {
        const digits = typeof p.arguments.digits === 'string' ? p.arguments.digits.replace(/\s/g, '') : '';
        const ok = p.name === PRESS_DIGITS_TOOL && DIGITS.test(digits) && (await send(state, { type: 'sendDigits', digits }));
        const result = ok ? { pressed: digits } : { error: p.name === PRESS_DIGITS_TOOL ? 'digits must be 0-9, * , # or w' : `${p.name} cannot run on a call` };
        results.push({ tool_call_id: p.id, name: p.name, output: result });
        toolsRun.push({ name: p.name, arguments: p.arguments, result: result as never, time_sec: seconds(clockMs()) });
      }
      out = await runTurn({ ...base, history: [...state.messages, ...added], toolResults: results, roundsUsed: out.roundsUsed });
      added.push(...out.messages);
    }
  } catch (err) {
    if (!(err instanceof LlmError) && !(err instanceof TurnDeadlineError)) throw err;
    logger.warn('The model failed a relay turn; the caller hears an apology', { call_id: state.call_id, error: err as Error });
    failed = true;
  }
  if (!added.length || added[0]!.role !== 'user') added.unshift({ role: 'user', content: userText });
  for (const m of added) {
    if (m.role !== 'tool_call' || m.name === PRESS_DIGITS_TOOL) continue; // press_digits is recorded as it runs
    const answer = added.find((r) => r.role === 'tool_result' && r.tool_call_id === m.tool_call_id);
    toolsRun.push({ name: m.name ?? '', arguments: m.arguments ?? {}, result: (answer?.result ?? null) as never, time_sec: seconds(atMs) });
  }
  const agentText = failed ? RELAY_APOLOGY : added.filter((m) => m.role === 'agent' && m.content).map((m) => m.content).join(' ').trim();
  if (failed) added.push({ role: 'agent', content: RELAY_APOLOGY });
  const first = agentText ? await sendReply(state, wordsOf(agentText), claim) : (await claim, undefined);

  const effect = out?.effect ?? {};
  const ending: RelayState['ending'] = effect.transferTo ? { reason: 'transferred', to: effect.transferTo } : effect.end ? {} : undefined;
  // Written before the end goes out: Twilio closes the socket on `end`, and `$disconnect` writes the call from this state.
  await finishTurn(state, () => myTurn, { user: { text: spoken, atMs }, messages: added, agentText, firstMs: first, tools: toolsRun, ending }, seconds);
  if (effect.transferTo) await transfer(state, effect.transferTo);
  else if (effect.end) await send(state, { type: 'end', handoffData: JSON.stringify({ reasonCode: 'end-call' }) });
}

/** Longest a turn waits for the one before it to be written (its reply went out before its write). */
const PREVIOUS_TURN_WAIT_MS = 5_000;

/**
 * The state once the turn before is written: a reply goes out token by token before its turn is
 * written, so the caller's next words may come first; they must see it in their history.
 */
async function afterTurnInFlight(read: RelayState): Promise<RelayState | undefined> {
  let state: RelayState | undefined = read;
  const deadline = Date.now() + PREVIOUS_TURN_WAIT_MS;
  while (state && state.turn_done < state.turn && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
    state = await readRelayState(read.connection_id);
  }
  return state;
}

/** `transfer_call`: the live call dials the number (`<Dial>`, the agent's ring duration), and the relay ends with hand-off data. */
async function transfer(state: RelayState, to: string): Promise<void> {
  const carrier = telephony();
  const timeout = Math.max(5, Math.min(600, Math.round((state.agent.ring_duration_ms || 30_000) / 1000)));
  const xml = to.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  await send(state, { type: 'end', handoffData: JSON.stringify({ reasonCode: 'transfer', to }) });
  if (!carrier.updateCall || !state.call_sid) {
    logger.error('A relay transfer could not dial: no carrier call to update', { call_id: state.call_id });
    return;
  }
  try {
    await carrier.updateCall(state.call_sid, { twiml: `<Response><Dial timeout="${timeout}">${xml}</Dial></Response>` });
  } catch (err) {
    logger.error('The carrier did not take a relay transfer', { call_id: state.call_id, error: err as Error });
  }
}

interface TurnRecord {
  user: { text: string; atMs: number };
  messages: ConversationMessage[];
  agentText: string;
  firstMs: number | undefined;
  tools: RelayState['tool_calls'];
  ending?: RelayState['ending'];
}

/** Writes the turn: its messages, the transcript (cut when it was interrupted meanwhile), tool calls, the end asked for. */
async function finishTurn(state: RelayState, turnOf: () => number, rec: TurnRecord, seconds: (ms: number) => number): Promise<void> {
  await changeRelayState(state.connection_id, (s) => {
    const turn = turnOf();
    const transcript = [...s.transcript, { role: 'user' as const, text: rec.user.text, time_sec: seconds(rec.user.atMs) }];
    if (rec.agentText) transcript.push({ role: 'agent', text: rec.agentText, time_sec: seconds(rec.firstMs ?? clockMs()) });
    let messages = [...s.messages, ...rec.messages];
    let cut: Pick<RelayState, 'messages' | 'transcript'> = { messages, transcript };
    const interrupted = s.pending_interrupt && s.pending_interrupt.turn === turn;
    if (interrupted && rec.agentText) cut = cutLastAgentTurn(messages, transcript, s.pending_interrupt!.heard);
    messages = cut.messages;
    transcript.sort((a, b) => a.time_sec - b.time_sec);
    return {
      messages,
      transcript: cut.transcript.sort((a, b) => a.time_sec - b.time_sec),
      tool_calls: [...s.tool_calls, ...rec.tools],
      turn_done: Math.max(s.turn_done, turn),
      ...(interrupted ? { pending_interrupt: null as never } : {}),
      ...(rec.ending ? { ending: rec.ending } : {}),
    };
  });
}

/** `$disconnect`: the relay is over; the conversation goes to the call (an inbound call ends with it), and the state is removed. */
export async function disconnectRelay(connectionId: string): Promise<void> {
  toolCache.delete(connectionId);
  // A turn still running when the caller hung up is written first (bounded), so the call keeps it.
  const read = await readRelayState(connectionId);
  const state = read && (await afterTurnInFlight(read));
  if (!state) return;
  await recordConversation(state.organization_id, state.call_id, {
    transcript: state.transcript,
    toolCalls: state.tool_calls,
    ...(state.ending?.reason ? { endReason: state.ending.reason } : {}),
    streamEndedAt: clockNow().toISOString(),
  });
  await deleteRelayState(connectionId);
}

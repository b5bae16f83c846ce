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
import { executeToolOnDemand, keptTurnOf, runTurn, TurnDeadlineError, type ConversationMessage, type TurnOutput } from '../conversations/engine';
import { TextChannel } from '../common/stream-body';
import { groundingPassages } from '../conversations/grounding';
import { toolsForAgent, type RunnableTool } from '../conversations/tools/catalog';
import type { executeTool } from '../conversations/tools/executor';
import { conversationRef } from '../conversations/types';
import { conversationSetup, loadConversationTimezone } from '../conversations/variables';
import { DIGITS, parseRelayMessage, type RelayOutbound, type SetupMessage } from './protocol';
import { changeRelayState, claimTurn, createRelayState, deleteRelayState, interruptOf, knownRelayState, readRelayState, type RelayAgent, type RelayState } from './state';
import { isRelayAgent } from './twiml';

/**
 * The relay's side of a ConversationRelay call (docs/api.md, "Two voice pipelines"): `$connect`
 * admits a connection with the call's one-use token; each `prompt` (its `last` one) runs one turn
 * of the chat engine with the agent's model, tools, knowledge base and variables, and the reply
 * goes back as `text` tokens as the model streams them; `interrupt` keeps only the words the caller
 * heard (and stops a reply still streaming); `dtmf` reaches
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
  // A turn claims itself and reads the state in one request (claimTurn): nothing else before the model.
  if (message.type === 'prompt') {
    if (message.last === false) return; // a partial transcript: the final one follows
    return utterance(connectionId, message.voicePrompt, message.voicePrompt);
  }
  if (message.type === 'dtmf') return utterance(connectionId, `The caller pressed ${message.digit} on their keypad.`, `(pressed ${message.digit})`);
  const state = await readRelayState(connectionId);
  if (!state) return;
  switch (message.type) {
    case 'setup':
      return setUp(state, message);
    case 'interrupt': {
      let pending: RelayState['pending_interrupt'];
      await changeRelayState(connectionId, (s) => {
        const change = interruption(s, message.utteranceUntilInterrupt);
        pending = change.pending_interrupt;
        return change;
      }, state);
      // The turn still speaking stops at once when it runs in this process; elsewhere it finds the interruption by polling.
      if (pending) for (const listener of interruptListeners.get(connectionId) ?? []) listener(pending.turn, pending.heard);
      return;
    }
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

/**
 * The caller cut the agent off. With a turn in flight the interruption waits for that turn's write
 * (the oldest in flight: turns speak in order), which settles whose words were cut: its own when
 * the words heard are the start of what it sent, else the reply before it (its audio was still
 * playing). With none in flight, the last written reply is cut now.
 */
function interruption(s: RelayState, heard: string): Partial<RelayState> {
  if (s.turn_done < s.turn) return { pending_interrupt: { turn: s.turn_done + 1, heard } };
  return cutLastAgentTurn(s.messages, s.transcript, heard);
}

/** Letters and digits only, lower-cased: Twilio's `utteranceUntilInterrupt` is compared with what was sent this way. */
const plain = (text: string) => text.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

/** Whether `heard` is the start of `sent` (what one reply's tokens said so far). */
export const heardOf = (heard: string, sent: string) => plain(sent).startsWith(plain(heard));

/** The start of `text` that holds `n` letters and digits (whole trailing punctuation dropped). */
function prefixWith(text: string, n: number): string {
  if (n <= 0) return '';
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    if (/[\p{L}\p{N}]/u.test(text[i]!)) count++;
    if (count >= n) return text.slice(0, i + 1);
  }
  return text;
}

/**
 * Cuts the last agent turn to the words heard: in the model's history every reply of the turn
 * (the text before and after its tool calls) keeps what was heard of it, in order, and a reply
 * nothing was heard of is dropped; in the transcript the turn's text becomes the words heard,
 * marked interrupted (nothing heard: no agent turn).
 */
function cutLastAgentTurn(messages: ConversationMessage[], transcript: RelayState['transcript'], heard: string): Pick<RelayState, 'messages' | 'transcript'> {
  const text = heard.trim();
  const t = [...transcript];
  const from = messages.findLastIndex((x) => x.role === 'user') + 1;
  let left = plain(text).length;
  const m: ConversationMessage[] = messages.slice(0, from);
  for (const x of messages.slice(from)) {
    if (x.role !== 'agent' || !x.content) {
      m.push(x);
      continue;
    }
    const kept = prefixWith(x.content, left).trim();
    left -= plain(kept).length;
    if (kept) m.push({ ...x, content: kept });
  }
  const ti = t.findLastIndex((x) => x.role === 'agent');
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

/** Each connection's turns listening for interruptions in this process (the local runtime; a warm container). */
const interruptListeners = new Map<string, Set<(turn: number, heard: string) => void>>();

/** How often a speaking turn reads whether it was interrupted (deployed, the interruption arrives in another invocation). */
export const INTERRUPT_POLL_MS = 200;

/**
 * One turn's reply on its way to the caller: the model's text pushed as it comes (a TextChannel),
 * sent as `text` tokens (`last: false`) in order, `last: true` at the end. An interruption of this
 * reply (the words heard are the start of what it sent) stops the sending: the rest is dropped.
 */
class Reply {
  /** Everything the turn said (sent or not): the transcript's text before any cut. */
  text = '';
  /** What went out. */
  sent = '';
  /** When the first token went out (ms). */
  firstMs: number | undefined;
  stopped = false;
  private readonly channel = new TextChannel();
  private readonly sending: Promise<void>;
  private lastMessage: string | undefined;
  private poll: NodeJS.Timeout | undefined;
  private readonly listener = (turn: number, heard: string) => this.interrupted(turn, heard);

  /** Its turn's claim did not hold (another write came first): nothing was sent, nothing is written. */
  abandoned = false;

  /** `gate`: resolves true once the turn's claim is written and the state the turn started from is the current one. */
  constructor(private readonly state: RelayState, private readonly turn: number, private readonly gate: Promise<boolean> = Promise.resolve(true)) {
    let listeners = interruptListeners.get(state.connection_id);
    if (!listeners) interruptListeners.set(state.connection_id, (listeners = new Set()));
    listeners.add(this.listener);
    this.sending = this.run();
  }

  /** A piece of a reply's text; a new reply of the turn (after tool calls) is set apart by a space. */
  push(delta: string, messageId = ''): void {
    if (!delta) return;
    if (this.lastMessage !== undefined && messageId !== this.lastMessage && this.text && !/\s$/.test(this.text) && !/^\s/.test(delta)) delta = ` ${delta}`;
    this.lastMessage = messageId;
    this.text += delta;
    this.channel.push(delta);
  }

  /** Whether an interruption with these words heard is of this reply. */
  owns(heard: string): boolean {
    return this.firstMs !== undefined && heardOf(heard, this.sent);
  }

  private interrupted(turn: number, heard: string): void {
    if (turn === this.turn && !this.stopped && this.owns(heard)) this.stopped = true;
  }

  /** Whether the turn may act (send, run tools): its claim held. */
  ready(): Promise<boolean> {
    return this.gate;
  }

  private async run(): Promise<void> {
    for await (const token of this.channel) {
      if (this.stopped) continue; // interrupted: the rest is dropped
      if (this.firstMs === undefined) {
        // The first token waits for the claim (written while the model worked), so an interruption always finds the turn.
        if (!(await this.gate)) {
          this.abandoned = this.stopped = true;
          continue;
        }
        this.firstMs = clockMs();
        this.poll = setInterval(() => {
          void interruptOf(this.state.connection_id, this.turn).then((heard) => heard !== undefined && this.interrupted(this.turn, heard), () => undefined);
        }, INTERRUPT_POLL_MS);
        this.poll.unref?.();
      }
      if (!(await send(this.state, { type: 'text', token, last: false }))) {
        this.stopped = true; // the connection is gone
        continue;
      }
      this.sent += token;
    }
    if (this.firstMs !== undefined && !this.stopped) await send(this.state, { type: 'text', token: '', last: true });
    if (this.firstMs === undefined && !(await this.gate)) this.abandoned = true;
  }

  /** Ends the reply: resolves once its last token (and `last: true`) went out. */
  async finish(): Promise<void> {
    this.channel.end();
    try {
      await this.sending;
    } finally {
      clearInterval(this.poll);
      const listeners = interruptListeners.get(this.state.connection_id);
      listeners?.delete(this.listener);
      if (listeners && !listeners.size) interruptListeners.delete(this.state.connection_id);
    }
  }
}

/** A turn started from a state that was not the current one: dropped before it said or did anything. */
class Abandoned extends Error {}

/**
 * One caller utterance (or keypress). The turn is claimed (and the state read) in one request;
 * meanwhile, when this process knows the connection's state, the model is already asked from it:
 * the claim's answer tells whether that state was still the current one (nothing else written in
 * between), else that start is dropped (nothing sent, no tool run) and the turn starts again from
 * the state the claim read. The reply's text goes to the caller as it comes (tool calls run
 * between, on the platform); then the turn is written.
 */
async function utterance(connectionId: string, userText: string, spoken: string): Promise<void> {
  const atMs = clockMs();
  const known = knownRelayState(connectionId);
  const claiming = claimTurn(connectionId);
  const max = (s: RelayState) => s.agent.max_call_duration_ms > 0 && atMs - s.connected_at_ms >= s.agent.max_call_duration_ms;
  if (known && known.turn_done === known.turn && !known.ending && !max(known)) {
    const current = claiming.then((c) => !!c && c.turn === known.turn + 1 && c.version === (known.version ?? 0) + 1, () => false);
    const reply = new Reply(known, known.turn + 1, current);
    const started = respond(known, known.turn + 1, reply, userText, spoken, atMs).then(() => true, (err) => {
      if (err instanceof Abandoned) return false;
      throw err;
    });
    if (await current) {
      await started;
      return;
    }
    started.catch(() => undefined); // its model request ends on its own; it sends and runs nothing
  }
  const claimed = await claiming;
  if (!claimed) return;
  const myTurn = claimed.turn;
  // A reply goes out before its turn is written: the caller's next words may come first, and must see it in their history.
  const state = claimed.turn_done < myTurn - 1 ? await afterTurnInFlight(claimed, myTurn - 1) : claimed;
  if (!state || state.ending) {
    await changeRelayState(connectionId, (s) => ({ turn_done: Math.max(s.turn_done, myTurn) })).catch(() => undefined);
    return;
  }
  const reply = new Reply(state, myTurn);
  if (max(state)) {
    reply.push(RELAY_TIME_UP);
    await reply.finish();
    const seconds = (ms: number) => Math.max(0, Math.round((ms - state.connected_at_ms) / 100) / 10);
    await finishTurn(state, myTurn, reply, { user: { text: spoken, atMs }, messages: [{ role: 'user', content: userText }, { role: 'agent', content: RELAY_TIME_UP }], tools: [], ending: {} }, seconds);
    await send(state, { type: 'end', handoffData: JSON.stringify({ reasonCode: 'max-duration' }) });
    return;
  }
  await respond(state, myTurn, reply, userText, spoken, atMs);
}

/** The turn itself: the engine with the model streaming into `reply`, tools gated on the claim, then the write. */
async function respond(state: RelayState, myTurn: number, reply: Reply, userText: string, spoken: string, atMs: number): Promise<void> {
  const seconds = (ms: number) => Math.max(0, Math.round((ms - state.connected_at_ms) / 100) / 10);
  // No tool runs before the claim held (a dropped start must not have acted on the world).
  const gatedTool: typeof executeTool = async (...args) => {
    if (!(await reply.ready())) throw new Abandoned();
    return executeToolOnDemand(...args);
  };
  const added: ConversationMessage[] = [];
  const toolsRun: RelayState['tool_calls'] = [];
  let out: TurnOutput | undefined;
  let failed = false;
  try {
    const [tools, passages] = await Promise.all([
      relayTools(state),
      state.agent.knowledge_base ? groundingPassages(state.organization_id, state.agent.knowledge_base, userText).catch(() => []) : Promise.resolve([]),
    ]);
    const deadlineMs = Date.now() + RELAY_TURN_BUDGET_MS;
    const stream = { onDelta: (delta: string, messageId: string) => reply.push(delta, messageId) };
    const base = { llm: llm(), model: state.agent.model, temperature: state.agent.temperature, system: state.system, tools, conversation: state.conversation, passages, deadlineMs, stream, executeTool: gatedTool };
    out = await runTurn({ ...base, history: state.messages, userText });
    added.push(...out.messages);
    // press_digits is answered here (the engine stops at it as at any caller-answered tool): the tones go out, the turn goes on.
    for (let rounds = 0; out.pending.length && rounds < 5; rounds++) {
      if (!(await reply.ready())) throw new Abandoned();
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
    if (err instanceof Abandoned || !(await reply.ready())) {
      reply.push(''); // nothing was sent
      await reply.finish().catch(() => undefined);
      throw new Abandoned();
    }
    if (!(err instanceof LlmError) && !(err instanceof TurnDeadlineError)) {
      await reply.finish().catch(() => undefined);
      throw err;
    }
    logger.warn('The model failed a relay turn; the caller hears an apology', { call_id: state.call_id, error: err as Error });
    failed = true;
    // What the turn did before it failed (whole tool rounds) is kept; the caller hears the apology after what they heard.
    added.push(...(keptTurnOf(err)?.messages ?? []).filter((m) => m.role !== 'agent'));
    reply.push(RELAY_APOLOGY, 'apology');
  }
  if (!added.length || added[0]!.role !== 'user') added.unshift({ role: 'user', content: userText });
  if (failed) added.push({ role: 'agent', content: RELAY_APOLOGY });
  for (const m of added) {
    if (m.role !== 'tool_call' || m.name === PRESS_DIGITS_TOOL) continue; // press_digits is recorded as it runs
    const answer = added.find((r) => r.role === 'tool_result' && r.tool_call_id === m.tool_call_id);
    toolsRun.push({ name: m.name ?? '', arguments: m.arguments ?? {}, result: (answer?.result ?? null) as never, time_sec: seconds(atMs) });
  }
  await reply.finish();
  if (reply.abandoned) throw new Abandoned();

  const effect = out?.effect ?? {};
  const ending: RelayState['ending'] = effect.transferTo ? { reason: 'transferred', to: effect.transferTo } : effect.end ? {} : undefined;
  // Written before the end goes out: Twilio closes the socket on `end`, and `$disconnect` writes the call from this state.
  await finishTurn(state, myTurn, reply, { user: { text: spoken, atMs }, messages: added, tools: toolsRun, ending }, seconds);
  if (effect.transferTo) await transfer(state, effect.transferTo);
  else if (effect.end) await send(state, { type: 'end', handoffData: JSON.stringify({ reasonCode: 'end-call' }) });
}

/** Longest a turn waits for the one before it to be written (its reply went out before its write). */
const PREVIOUS_TURN_WAIT_MS = 5_000;

/** The state once turn `done` is written (default: every turn claimed), waiting at most PREVIOUS_TURN_WAIT_MS. */
async function afterTurnInFlight(read: RelayState, done = read.turn): Promise<RelayState | undefined> {
  let state: RelayState | undefined = read;
  const deadline = Date.now() + PREVIOUS_TURN_WAIT_MS;
  while (state && state.turn_done < done && Date.now() < deadline) {
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
  tools: RelayState['tool_calls'];
  ending?: RelayState['ending'];
}

/**
 * Writes the turn: its messages, the transcript, tool calls, the end asked for. An interruption
 * that came while it was in flight cuts this reply when the words heard are the start of what it
 * sent, else the reply before it (still playing when the caller spoke).
 */
async function finishTurn(state: RelayState, turn: number, reply: Reply, rec: TurnRecord, seconds: (ms: number) => number): Promise<void> {
  const agentText = reply.text.trim();
  await changeRelayState(state.connection_id, (s) => {
    const pending = s.pending_interrupt && s.pending_interrupt.turn === turn ? s.pending_interrupt : undefined;
    const mine = !!pending && !!agentText && reply.owns(pending.heard);
    let before: Pick<RelayState, 'messages' | 'transcript'> = { messages: s.messages, transcript: s.transcript };
    if (pending && !mine) before = cutLastAgentTurn(s.messages, s.transcript, pending.heard);
    const transcript = [...before.transcript, { role: 'user' as const, text: rec.user.text, time_sec: seconds(rec.user.atMs) }];
    if (agentText) transcript.push({ role: 'agent', text: agentText, time_sec: seconds(reply.firstMs ?? clockMs()) });
    let cut: Pick<RelayState, 'messages' | 'transcript'> = { messages: [...before.messages, ...rec.messages], transcript };
    if (mine) cut = cutLastAgentTurn(cut.messages, cut.transcript, pending!.heard);
    return {
      messages: cut.messages,
      transcript: cut.transcript.sort((a, b) => a.time_sec - b.time_sec),
      tool_calls: [...s.tool_calls, ...rec.tools],
      turn_done: Math.max(s.turn_done, turn),
      ...(pending ? { pending_interrupt: null as never } : {}),
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

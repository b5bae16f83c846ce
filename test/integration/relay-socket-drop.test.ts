/**
 * Relay calls survive a dropped socket (issue 42, item 4). API Gateway closes a WebSocket idle for
 * 10 minutes and any at 2 hours (the local `/relay` server enforces both, read on the platform's
 * clock); a restart or the network may drop one too. The caller is still on the line: Twilio's
 * ConversationRelay session ends without `end`, Twilio requests the `<Connect action>`
 * (`SessionStatus` `failed`, `CallStatus` `in-progress`, no `HandoffData`) and runs what it answers,
 * a new session that resumes the conversation. `$disconnect` ends no call; the call's end comes
 * once, with the call (the caller's hang-up: the action's `CallStatus` `completed`, the carrier's
 * status callback), or past the reconnect budget with the apology.
 *
 * On the local runtime against the Twilio stand-in (test/support/twilio-carrier.ts), its
 * ConversationRelay client and a stand-in Chat Completions model. Time runs on a manual clock:
 * real time plus what the test advances, read by the platform, the relay server's limits and the
 * stand-in Twilio alike.
 */
import { installTimeSource } from '../../shared/clock';
import { RELAY_CANNOT_CONTINUE, RELAY_MAX_RECONNECTS } from '../../shared/domain/relay/call-ending';
import { uniquePhone } from '../support/numbers';
import type { RelayClient } from '../support/relay-client';
import type { StandInCall } from '../support/twilio-carrier';
import { useTwilioRelayPlatform } from '../support/twilio-relay-platform';
import { until } from '../support/until';

const { local, twilio: twilioOf, model: modelOf } = useTwilioRelayPlatform('AC0000000000000000000000000000fe42', 'relay-drop-token');
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);
const platform = () => local().platform;

/** The manual clock: the platform's time is real time plus `offsetMs`, which only `advance` moves; `freeze` stops it (until `thaw`). */
let offsetMs = 0;
let frozenAt: number | undefined;
beforeAll(() => installTimeSource({ now: () => frozenAt ?? Date.now() + offsetMs }));
afterAll(() => installTimeSource(undefined));
const advance = (ms: number) => void (offsetMs += ms);
const freeze = () => void (frozenAt = Date.now() + offsetMs);
const thaw = () => {
  offsetMs = frozenAt! - Date.now();
  frozenAt = undefined;
};

const MINUTE = 60_000;
const GREETING = 'Thanks for calling Acme, Ava speaking.';
const lastUser = (body: any): string => [...body.messages].reverse().find((m: any) => m.role === 'user')?.content ?? '';
/** The model answers each utterance with "Re: <what the caller said>". */
const echo = (body: any) => ({ text: `Re: ${lastUser(body)}` });

async function relayAgent(extra: Record<string, unknown> = {}): Promise<string> {
  const res = await api('POST', '/api/v1/agents', {
    body: { name: 'Relay desk', agent_name: 'Ava', voice_pipeline: 'relay', prompt: 'You are {{agent_name}} of Acme.', begin_message: 'Thanks for calling Acme, {{agent_name}} speaking.', selected_tools: [{ type: 'end_call' }], ...extra },
  });
  expect(res.status).toBe(200);
  return res.body.data.id;
}

/** An incoming call to a fresh number of `agentId`; `statusCallback: false`: a number Twilio sends no status for (the action alone reports the hang-up). */
async function callIn(agentId: string, options: { statusCallback?: boolean } = {}) {
  const phone = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', inbound_agent_id: agentId } })).status).toBe(200);
  const base = platform().url;
  twilioOf().adopt(phone, { voiceUrl: `${base}/api/v1/telephony/twilio/inbound`, ...(options.statusCallback === false ? {} : { statusCallback: `${base}/api/v1/telephony/twilio/status` }) });
  const call = await twilioOf().incomingCall(uniquePhone(), phone);
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  return { call, callId, relay: call.relay! };
}

/** The caller says `text` in `relay` and hears the answer (the relay's handlers done). */
async function ask(relay: RelayClient, text: string): Promise<void> {
  const heard = relay.replies().length;
  modelOf().script(echo);
  relay.say(text);
  await relay.until(() => relay.replies().length === heard + 1, `the answer to "${text}"`);
  expect(relay.replies().at(-1)).toBe(`Re: ${text}`);
  await platform().relay.idle();
}

/** API Gateway's idle timeout: 10 minutes with nothing on the socket, then the relay server closes it (1001) as API Gateway does. */
async function idleOut(relay: RelayClient): Promise<void> {
  advance(10 * MINUTE + 1000);
  platform().relay.enforceLimits();
  expect(await relay.closed).toBe(1001);
}

/** The session Twilio opens after the action answered the `n`th (1-based) one's end with a reconnect. */
async function session(call: StandInCall, n: number): Promise<RelayClient> {
  await until(async () => call.relays?.length ?? 0, (count) => count >= n, `session ${n} (${JSON.stringify({ actions: call.actions?.map((a) => a.twiml), failures: call.failures, refusals: call.refusals })})`);
  return call.relays![n - 1]!;
}

const callOf = async (callId: string) => (await api('GET', `/api/v1/calls/${callId}`)).body.data;
const endedEvents = async (callId: string) => (await api('GET', '/api/v1/events?type=call.ended&limit=100')).body.data.filter((e: any) => e.data?.id === callId);

/** The call ended (with its transcript), its one `call.ended` delivered. */
async function endedOnce(callId: string) {
  await platform().relay.idle();
  await platform().queue.waitForIdle();
  const ended = await until(() => callOf(callId), (c) => c.status === 'ended' && c.transcript?.length > 0, 'the call ended with its transcript');
  await until(() => endedEvents(callId), (events) => events.length > 0, 'call.ended');
  await platform().queue.waitForIdle();
  expect(await endedEvents(callId)).toHaveLength(1);
  return ended;
}

const texts = (call: any) => call.transcript.map((t: any) => t.text);

afterEach(() => modelOf().reset());

it('resumes a call whose socket API Gateway closed after 10 idle minutes: Twilio asks the action (failed, in-progress, no HandoffData), a new session goes on with the same conversation and no second greeting; the call ends once, at the hang-up', async () => {
  const { call, callId, relay } = await callIn(await relayAgent());
  await ask(relay, 'How long do refunds take?');

  await idleOut(relay);
  const resumed = await session(call, 2);
  const action = call.actions![0]!;
  expect(action.params).toMatchObject({ CallStatus: 'in-progress', SessionStatus: 'failed' });
  expect(action.params.HandoffData).toBeUndefined();
  expect(Number(action.params.SessionDuration)).toBeGreaterThanOrEqual(601);
  expect(action.twiml).toMatch(/<Connect action="[^"]*attempt=1"><ConversationRelay /);
  expect(action.twiml).not.toMatch(/welcomeGreeting/);
  await platform().relay.idle();
  // `$disconnect` came and went: the call is live, its conversation so far on it.
  expect(await callOf(callId)).toMatchObject({ status: 'in_progress', transcript: [expect.objectContaining({ text: GREETING }), expect.anything(), expect.anything()] });

  const before = modelOf().requests.length;
  await ask(resumed, 'And exchanges?');
  // The model has the whole conversation, the greeting once.
  const messages = modelOf().requests[before]!.body.messages.filter((m: any) => m.role !== 'system').map((m: any) => [m.role, m.content]);
  expect(messages).toEqual([['assistant', GREETING], ['user', 'How long do refunds take?'], ['assistant', 'Re: How long do refunds take?'], ['user', 'And exchanges?']]);

  advance(30_000);
  await twilioOf().hangUp(call.sid);
  await until(async () => call.actions?.length ?? 0, (n) => n === 2, 'the action after the hang-up');
  await call.after;
  expect(call.failures ?? []).toEqual([]);
  expect(call.relays).toHaveLength(2);
  expect(call.actions!.at(-1)!.params).toMatchObject({ CallStatus: 'completed', SessionStatus: 'completed' });
  const ended = await endedOnce(callId);
  expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
  expect(texts(ended)).toEqual([GREETING, 'How long do refunds take?', 'Re: How long do refunds take?', 'And exchanges?', 'Re: And exchanges?']);
  // 10 idle minutes and the half minute after: the call's whole length, across both sessions.
  expect(ended.duration_sec).toBeGreaterThanOrEqual(631);
  expect(ended.duration_sec).toBeLessThanOrEqual(640);
});

it('survives API Gateway\'s 2-hour limit on a long call: the socket closes at 2 hours while the caller talks on, the conversation resumes in a new session', async () => {
  const { call, callId, relay } = await callIn(await relayAgent({ max_call_duration_ms: 4 * 3600_000 }));
  // The caller speaks every 9 minutes (never 10 idle), the last time at 114 minutes, before the session cap (115) ends a session itself.
  const said: string[] = [];
  for (let minute = 0; minute <= 108; minute += 9) {
    if (minute) advance(9 * MINUTE);
    said.push(`Question at minute ${minute}?`);
    await ask(relay, said.at(-1)!);
  }
  advance(6 * MINUTE);
  said.push('Question at minute 114?');
  await ask(relay, said.at(-1)!);
  expect(relay.open).toBe(true);

  advance(6 * MINUTE + 1000); // 2 hours since the connection opened, 6 minutes since it last carried anything
  platform().relay.enforceLimits();
  expect(await relay.closed).toBe(1001);
  expect(relay.received.some((m) => m.type === 'end')).toBe(false);
  const resumed = await session(call, 2);
  expect(call.actions![0]!.params).toMatchObject({ CallStatus: 'in-progress', SessionStatus: 'failed' });
  expect(Number(call.actions![0]!.params.SessionDuration)).toBeGreaterThanOrEqual(7200);
  said.push('Still there after two hours?');
  await ask(resumed, said.at(-1)!);

  await twilioOf().hangUp(call.sid);
  await call.after;
  const ended = await endedOnce(callId);
  expect(texts(ended)).toEqual([GREETING, ...said.flatMap((q) => [q, `Re: ${q}`])]);
  expect(ended.duration_sec).toBeGreaterThanOrEqual(7201);
  expect(ended.duration_sec).toBeLessThanOrEqual(7215);
});

it('resumes a call whose socket closes while a reply is being spoken: the turn keeps what went out (cut short), the model and the transcript go on from there', async () => {
  const { call, callId, relay } = await callIn(await relayAgent({ max_call_duration_ms: 4 * 3600_000 }));
  // API Gateway's connection limit, shortened to 20 minutes here so that it falls while a reply is being spoken (its enforcement is what is tested; the 2 hours are above).
  const limits = { ...platform().relay.faults.limits };
  platform().relay.faults.limits.connectionMs = 20 * MINUTE;
  try {
    await ask(relay, 'Hello?');
    advance(9 * MINUTE);
    await ask(relay, 'Are you open on Sundays?');
    advance(9 * MINUTE);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    modelOf().script({ text: 'Let me check. We have seven kettles.', pieces: ['Let me check.', ' We have seven kettles.'], holdUntil: held });
    relay.say('Is the kettle in stock?');
    await relay.until(() => relay.received.some((m) => m.type === 'text' && m.token === 'Let me check.'), 'the first words');
    advance(2 * MINUTE + 1000); // 20 minutes since the connection opened, 2 since anything crossed it
    platform().relay.enforceLimits();
    expect(await relay.closed).toBe(1001);
    release(); // the rest of the reply comes from the model after the socket is gone
    const resumed = await session(call, 2);
    await platform().relay.idle();
    const before = modelOf().requests.length;
    await ask(resumed, 'You cut out. How many?');
    const history = modelOf().requests[before]!.body.messages.filter((m: any) => m.role !== 'system').map((m: any) => [m.role, m.content]);
    expect(history.slice(-3)).toEqual([['user', 'Is the kettle in stock?'], ['assistant', 'Let me check.'], ['user', 'You cut out. How many?']]);
  } finally {
    platform().relay.faults.limits = limits;
  }
  await twilioOf().hangUp(call.sid);
  const ended = await endedOnce(callId);
  expect(ended.transcript.map((t: any) => [t.role, t.text, t.interrupted ?? false])).toEqual([
    ['agent', GREETING, false],
    ['user', 'Hello?', false],
    ['agent', 'Re: Hello?', false],
    ['user', 'Are you open on Sundays?', false],
    ['agent', 'Re: Are you open on Sundays?', false],
    ['user', 'Is the kettle in stock?', false],
    ['agent', 'Let me check.', true],
    ['user', 'You cut out. How many?', false],
    ['agent', 'Re: You cut out. How many?', false],
  ]);
});

it('resumes after the network drops the socket (no close handshake) within the second the call was answered, and on an outbound call, which the carrier\'s status ends', async () => {
  const agentId = await relayAgent({ start_speaker: 'agent' });
  const from = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone: from, type: 'pstn' } })).status).toBe(200);
  const to = uniquePhone();
  const created = await api('POST', '/api/v1/calls', { body: { agent_id: agentId, from_phone_number: from, to_phone_number: to } });
  expect(created.status).toBe(200);
  const callId = created.body.data.id;
  await platform().queue.waitForIdle();
  const placed = twilioOf().placedTo(to).find((c) => c.status === 'queued')!;
  // The clock stands still from the answer to the resumed session: the reconnect's token is signed within the same second as the first one.
  freeze();
  try {
    const call = await twilioOf().answer(placed.sid);
    const relay = call.relay!;
    await ask(relay, 'Who is calling?');
    relay.drop();
    const resumed = await session(call, 2);
    await ask(resumed, 'Sorry, you broke up. Who is it?');
    expect(call.refusals ?? []).toEqual([]);
    expect(call.actions).toHaveLength(1);
    expect(call.actions![0]!.params).toMatchObject({ CallStatus: 'in-progress', SessionStatus: 'failed', Direction: 'outbound-api' });
    expect(call.actions![0]!.twiml).not.toMatch(/welcomeGreeting/);
  } finally {
    thaw();
  }
  const call = twilioOf().calls.get(placed.sid)!;
  advance(15_000);
  await twilioOf().hangUp(call.sid);
  const ended = await endedOnce(callId);
  expect(ended).toMatchObject({ status: 'ended', direction: 'outbound', disconnection_reason: 'completed' });
  expect(texts(ended)).toEqual([GREETING, 'Who is calling?', 'Re: Who is calling?', 'Sorry, you broke up. Who is it?', 'Re: Sorry, you broke up. Who is it?']);
  expect(ended.duration_sec).toBeGreaterThanOrEqual(15);
  expect(ended.duration_sec).toBeLessThanOrEqual(25);
});

it('ends the call once when the caller hangs up after a drop: $disconnect alone ends nothing, the action\'s CallStatus completed ends the call and reconnects nothing', async () => {
  // No status callback for this number: only the <Connect action> tells the platform the caller left.
  const { call, callId, relay } = await callIn(await relayAgent(), { statusCallback: false });
  await ask(relay, 'Where is my order?');
  await idleOut(relay);
  const resumed = await session(call, 2);
  await platform().relay.idle();
  expect((await callOf(callId)).status).toBe('in_progress');

  await ask(resumed, 'Hello again?');
  advance(20_000);
  resumed.close(); // the caller hangs up: Twilio closes the socket
  await resumed.closed;
  await until(async () => call.actions?.length ?? 0, (n) => n === 2, 'the action after the hang-up');
  await call.after;
  expect(call.status).toBe('completed');
  const last = call.actions![1]!;
  expect(last.params).toMatchObject({ CallStatus: 'completed', SessionStatus: 'completed' });
  expect(last.twiml).not.toMatch(/ConversationRelay/);
  expect(twilioOf().callbacks.filter((c) => c.params.CallSid === call.sid)).toEqual([]);
  const ended = await endedOnce(callId);
  expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
  expect(texts(ended)).toEqual([GREETING, 'Where is my order?', 'Re: Where is my order?', 'Hello again?', 'Re: Hello again?']);
  expect(ended.duration_sec).toBeGreaterThanOrEqual(621);
  expect(ended.duration_sec).toBeLessThanOrEqual(630);
  expect(call.relays).toHaveLength(2);
});

it('still ends the call at the platform\'s own `end` (end_call): the action hangs up, nothing reconnects, the call ends once', async () => {
  const { call, callId, relay } = await callIn(await relayAgent());
  await ask(relay, 'What are your hours?');
  modelOf().script({ toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] }, { text: 'Goodbye!' });
  relay.say('That is all, bye.');
  expect(await relay.closed).toBe(1000);
  await until(async () => call.actions?.length ?? 0, (n) => n === 1, 'the <Connect action>');
  await call.after;
  expect(call.actions![0]!.params).toMatchObject({ CallStatus: 'in-progress', SessionStatus: 'ended', HandoffData: JSON.stringify({ reasonCode: 'end-call' }) });
  expect(call.actions![0]!.twiml).toMatch(/<Hangup\/>/);
  expect(call.status).toBe('completed');
  expect(call.relays).toHaveLength(1);
  const ended = await endedOnce(callId);
  expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
  expect(texts(ended)).toEqual([GREETING, 'What are your hours?', 'Re: What are your hours?', 'That is all, bye.', 'Goodbye!']);
});

it(`ends a call whose socket drops past the reconnect budget (${RELAY_MAX_RECONNECTS} reconnects) with the apology, once, every turn kept`, async () => {
  // An hour allowed (the default is 30 minutes): the drops' 40 idle minutes stay within the call's limit, so the budget is what ends it.
  const { call, callId, relay } = await callIn(await relayAgent({ max_call_duration_ms: 3600_000 }));
  let current = relay;
  const said: string[] = [];
  for (let n = 1; n <= RELAY_MAX_RECONNECTS + 1; n++) {
    said.push(`Turn in session ${n}.`);
    await ask(current, said.at(-1)!);
    await idleOut(current);
    if (n <= RELAY_MAX_RECONNECTS) current = await session(call, n + 1);
  }
  await until(async () => call.actions?.length ?? 0, (n) => n === RELAY_MAX_RECONNECTS + 1, 'the last action');
  await call.after;
  expect(call.failures ?? []).toEqual([]);
  expect(call.relays).toHaveLength(RELAY_MAX_RECONNECTS + 1);
  expect(call.actions!.map((a) => a.params.SessionStatus)).toEqual(Array(RELAY_MAX_RECONNECTS + 1).fill('failed'));
  expect(call.actions!.at(-1)!.twiml).toMatch(/<Hangup\/>/);
  expect(call.said).toEqual([RELAY_CANNOT_CONTINUE]);
  expect(call.status).toBe('completed');
  const ended = await endedOnce(callId);
  expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
  expect(texts(ended)).toEqual([GREETING, ...said.flatMap((q) => [q, `Re: ${q}`])]);
});

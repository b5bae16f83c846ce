/**
 * Warm transfer on the Realtime pipeline (issue 37; docs/api.md, "Hand-offs" → "On calls"), end
 * to end on the local runtime: an inbound call from the Twilio stand-in (REST, live updates,
 * `<Gather>`, conferences and their callbacks) streamed to the voice runtime, the scripted Realtime
 * stand-in playing the model. The agent's words play, the runtime writes the conversation without
 * ending the call, starts the transfer and moves the caller into the conference (the stream
 * stops); the person accepts (1), declines (another key) or does not answer. Declined or
 * unanswered, the caller comes back on a new stream with `resume`: a new Realtime session is given
 * the conversation so far as items, says what happened and goes on; the call keeps one whole
 * transcript, its events and its charges.
 */
import { clockMs } from '../../shared/clock';
import { uniquePhone } from '../support/numbers';
import type { ModelConnection } from '../support/realtime-stand-in';
import { startTwilioCarrier, type StandInCall, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { mulawRecording, type TwilioMediaClient } from '../support/twilio-media-client';
import { until } from '../support/until';
import { useVoiceCallWiring } from '../support/voice-call-wiring';

const SID = 'AC0000000000000000000000000000f137';
const TOKEN = 'warm-realtime-token';
const BILLING = '+14155550181';
let twilio: TwilioCarrierStandIn;
const ready = startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() }).then((t) => (twilio = t));
beforeAll(() => ready);
afterAll(() => twilio?.close());

const { local, api, scripts, advanceClock, callOf, chargesOf, eventsOf } = useVoiceCallWiring(() => ({
  TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN,
}));

/** The recovery sweep as its schedule runs it: the call-recovery job under its own grants, at the clock's now; then what it queued. */
async function sweep() {
  await local().platform.scheduler.runNow('call-recovery');
  await local().platform.queue.waitForIdle();
}
const tone = (seconds: number, seed: number) => mulawRecording(seconds, seed);
const texts = (call: any) => call.transcript.map((t: any) => [t.role, t.text]);
const CONNECTING = 'Let me connect you with our billing desk, one moment.';

let spare = 0;
/** A number bought from the Twilio stand-in (priced: the call's minutes are charged), answered by `agentId`. */
async function boughtNumber(agentId: string): Promise<string> {
  const phone = twilio.available[spare++]!;
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: phone, price: 1.15, per_minute_price_inbound: 0.0085, per_minute_price_outbound: 0.014, inbound_agent_id: agentId } });
  expect(bought.status).toBe(200);
  return phone;
}

/** What each Realtime session of a call received: the first (before the transfer), the resumed one. */
interface Sessions {
  first: { update?: any; output?: any };
  resumed: { update?: any; history: any[]; create?: any };
}

/**
 * A call whose agent transfers it warm to billing: the first session greets, hears the caller ask
 * for billing, says it connects them and calls transfer_call; a second session (the caller back)
 * is checked by the test through `sessions.resumed`, says `sorry` and answers the caller's message.
 */
async function transferredCall(name: string, sorry = '', o: { inConference?: boolean } = {}) {
  const sessions: Sessions = { first: {}, resumed: { history: [] } };
  let connections = 0;
  scripts.set(name, async (m: ModelConnection) => {
    if (++connections === 1) {
      sessions.first.update = await m.next('session.update');
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 1), transcript: 'Acme, how can I help?' });
      await m.until(() => m.inputAudio().length >= 800, 'caller audio');
      m.userSays('u1', 'I was charged twice, can I talk to billing?');
      m.speak({ responseId: 'r2', itemId: 'i2', audio: tone(0.2, 2), transcript: CONNECTING, calls: [{ callId: 'c1', name: 'transfer_call', args: { reason: 'double charge' } }] });
      sessions.first.output = await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output');
      return m.closed; // the runtime leaves the model once the caller is in the conference
    }
    sessions.resumed.update = await m.next('session.update');
    sessions.resumed.create = await m.next('response.create');
    sessions.resumed.history = m.received.filter((e) => e.type === 'conversation.item.create');
    m.speak({ responseId: 'r3', itemId: 'i3', audio: tone(0.2, 3), transcript: sorry });
    await m.until(() => m.inputAudio().length >= 800, 'the caller answering');
    m.userSays('u2', 'Please ask them to call me back.');
    m.speak({ responseId: 'r4', itemId: 'i4', audio: tone(0.2, 4), transcript: 'Of course. What number should they call?' });
    await m.closed;
  });
  const created = await api('POST', '/api/v1/agents', {
    body: {
      name: 'Warm desk', s2s_model: name, reminder_trigger_ms: 0, ring_duration_ms: 20_000, prompt: 'You are the front desk of Acme.', begin_message: 'Acme, how can I help?',
      selected_tools: [{ type: 'transfer_call', phone_number: BILLING, mode: 'warm' }],
    },
  });
  expect(created.status).toBe(200);
  const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(created.body.data.id));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const first = call.stream!;
  await first.until(() => first.media.length > 0, 'the greeting');
  await first.play(tone(0.2, 9));
  if (o.inConference !== false) await until(async () => call.conference, (c) => !!c, 'the caller in the conference');
  const leg = (await until(async () => twilio.placedTo(BILLING).find((c) => c.status === 'queued'), (c) => !!c, 'the person dialed'))!;
  // The briefing is made while the person's phone rings (their `initiated`/`ringing` callbacks), before anyone answers.
  await until(() => callOf(callId), (c) => !!c.transfers?.[0]?.briefing, 'the briefing made while the phone rings');
  return { call, callId, first, leg, sessions };
}

it('accepted: the agent\'s words play, the caller holds in the conference (the stream stopped, the call not ended), 1 bridges them; the call ends `transferred` with one transcript, events and both legs charged', async () => {
  const { call, callId, first, leg, sessions } = await transferredCall('warm-accepted');
  // The agent's words were all sent before the caller left the stream, and the stream stopped: the live call was given the conference.
  expect(Buffer.concat(first.media).length).toBe(2 * 1600);
  expect((await first.closed).code).toBe(1000);
  expect(call.documents!.at(-1)).toMatch(/^<\?xml[^>]*><Response><Dial><Conference startConferenceOnEnter="false" endConferenceOnExit="true"/);
  expect(call.onHold).toMatch(/holdmusic/);
  expect(JSON.parse(sessions.first.output.item.output)).toEqual({ pending: 'runs once your last words have played' });
  // While the person's phone rings: the conversation is on the call, the call goes on, nothing ended it.
  const during = await callOf(callId);
  expect(during).toMatchObject({ status: 'in_progress', disconnection_reason: null, transfers: [{ phone_number: BILLING, mode: 'warm', outcome: null }] });
  expect(texts(during)).toEqual([['agent', 'Acme, how can I help?'], ['user', 'I was charged twice, can I talk to billing?'], ['agent', CONNECTING]]);
  expect(during.transfers[0].briefing).toMatch(/^Incoming transfer from the AI agent\. Caller: \+1\d+\. Reason: double charge\./);
  expect(leg.from).toBe(call.to);

  advanceClock(5_000);
  await twilio.answer(leg.sid, { digits: '1' });
  expect(leg.said![0]).toBe(during.transfers[0].briefing);
  const conference = twilio.conferences.get(call.conference!)!;
  expect(conference.status).toBe('in-progress');
  expect(call.onHold).toBeUndefined();
  advanceClock(90_000); // they talk for a minute and a half
  await twilio.hangUp(leg.sid);
  expect(call.status).toBe('completed');
  await local().platform.queue.waitForIdle();
  const ended = await until(() => callOf(callId), (c) => c.status === 'ended', 'the call ended');
  expect(ended.disconnection_reason).toBe('transferred');
  expect(texts(ended)).toEqual([
    ['agent', 'Acme, how can I help?'],
    ['user', 'I was charged twice, can I talk to billing?'],
    ['agent', CONNECTING],
    ['system', `Warm transfer to ${BILLING}: briefing: ${during.transfers[0].briefing}`],
    ['system', `Warm transfer to ${BILLING}: connected: the person accepted; the caller is connected to them and the agent left the call`],
  ]);
  expect(ended.tool_calls.map((t: any) => [t.name, t.arguments, t.result])).toEqual([['transfer_call', { reason: 'double charge' }, { transferring_to: BILLING, mode: 'warm' }]]);
  expect((await eventsOf('call.transfer_started', callId)).map((e: any) => e.data.transfer.index)).toEqual([0]);
  expect((await eventsOf('call.transferred', callId)).map((e: any) => e.data.transfer.outcome)).toEqual(['connected']);
  expect(await eventsOf('call.transfer_failed', callId)).toEqual([]);
  expect(await eventsOf('call.ended', callId)).toHaveLength(1);
  const charges = (await chargesOf(callId)).map((c: any) => c.description).sort();
  // As Twilio bills it: the caller's minutes, the person's leg (Pricing v2's US price), its machine detection, the conference's participant minutes (2 + 2).
  expect(charges).toEqual([
    expect.stringMatching(/^Inbound call from \+1\d+: \d+ min at 0\.0085 USD\/min$/),
    `Warm transfer to ${BILLING} (call ${callId}): 2 min at 0.014 USD/min`,
    `Answering machine detection on the warm transfer to ${BILLING} (call ${callId}): 1 detection at 0.0075 USD`,
    `Warm transfer conference (call ${callId}): 4 participant-min (2 participants) at 0.0018 USD/min`,
  ].sort());
});

/** The caller back from a transfer the person did not take: a new stream with `resume`, a new session given the history, the agent going on. */
async function backWithAgent(o: { call: StandInCall; callId: string; first: TwilioMediaClient; sessions: Sessions }, outcome: string, sorry: string) {
  const { call, callId, first, sessions } = o;
  const back = (await until(async () => call.stream, (s) => !!s && s !== first, 'the caller back on a new stream'))!;
  expect(call.documents!.at(-1)).toMatch(/<Parameter name="resume" value="0"\/>/);
  expect(call.conference).toBeUndefined();
  await back.until(() => back.media.length > 0, 'the agent saying so');
  await back.play(tone(0.2, 10));
  await back.until(() => Buffer.concat(back.media).length >= 2 * 1600, 'the agent going on');
  // The resumed session: the same agent, the conversation so far as items (the agent's turns as text, the platform's lines as system), then told what happened.
  expect(sessions.resumed.update.session.instructions).toBe('You are the front desk of Acme.');
  expect(sessions.resumed.history.map((e) => [e.item.role, e.item.content[0].type, e.item.content[0].text])).toEqual([
    ['assistant', 'output_text', 'Acme, how can I help?'],
    ['user', 'input_text', 'I was charged twice, can I talk to billing?'],
    ['assistant', 'output_text', CONNECTING],
    ['system', 'input_text', expect.stringMatching(new RegExp(`^Warm transfer to \\${BILLING}: briefing: `))],
    ['system', 'input_text', expect.stringMatching(new RegExp(`^Warm transfer to \\${BILLING}: ${outcome}: `))],
  ]);
  expect(sessions.resumed.create.response.instructions).toContain(sorry);
  await twilio.hangUp(call.sid);
  await local().platform.queue.waitForIdle();
  const ended = await until(() => callOf(callId), (c) => c.status === 'ended', 'the call ended');
  expect(ended.disconnection_reason).toBe('completed');
  expect(ended.transfers).toEqual([expect.objectContaining({ phone_number: BILLING, mode: 'warm', outcome })]);
  expect(texts(ended)).toEqual([
    ['agent', 'Acme, how can I help?'],
    ['user', 'I was charged twice, can I talk to billing?'],
    ['agent', CONNECTING],
    ['system', expect.stringMatching(/: briefing: Incoming transfer from the AI agent\./)],
    ['system', expect.stringMatching(new RegExp(`: ${outcome}: .*the caller is back with the agent$`))],
    ['agent', sorry],
    ['user', 'Please ask them to call me back.'],
    ['agent', 'Of course. What number should they call?'],
  ]);
  expect(ended.transcript.map((t: any) => t.time_sec)).toEqual([...ended.transcript.map((t: any) => t.time_sec)].sort((a: number, b: number) => a - b));
  expect((await eventsOf('call.transfer_failed', callId)).map((e: any) => e.data.transfer.outcome)).toEqual([outcome]);
  expect(await eventsOf('call.transferred', callId)).toEqual([]);
  expect(await eventsOf('call.ended', callId)).toHaveLength(1);
  return ended;
}

it('declined: another key sends the caller back on a resumed stream; the agent says so, offers a message and goes on; the caller\'s minutes are charged', async () => {
  const sorry = "I'm sorry, the person I called could not take your call just now. I can take a message or arrange a callback. Which would you prefer?";
  const t = await transferredCall('warm-declined', sorry);
  advanceClock(30_000); // the person listens to the briefing and declines
  await twilio.answer(t.leg.sid, { digits: '2' });
  expect(t.leg.status).toBe('completed');
  await backWithAgent(t, 'declined', sorry);
  // The person answered and declined at once: their leg at most a minute, its detection; the caller's 30 s on hold in the conference, one participant-minute.
  const charges = (await chargesOf(t.callId)).map((c: any) => c.description);
  expect(charges.filter((d: string) => !d.startsWith('Warm transfer to')).sort()).toEqual([
    expect.stringMatching(/^Inbound call from \+1\d+: \d+ min at 0\.0085 USD\/min$/),
    `Answering machine detection on the warm transfer to ${BILLING} (call ${t.callId}): 1 detection at 0.0075 USD`,
    `Warm transfer conference (call ${t.callId}): 1 participant-min (1 participants) at 0.0018 USD/min`,
  ].sort());
  expect(charges.filter((d: string) => d.startsWith('Warm transfer to'))).toEqual(charges.some((d: string) => d.startsWith('Warm transfer to')) ? [`Warm transfer to ${BILLING} (call ${t.callId}): 1 min at 0.014 USD/min`] : []);
});

it('unanswered: the person\'s phone rings out; the caller comes back to the agent, nothing is charged for the person\'s leg', async () => {
  const sorry = "I'm sorry, the person I called did not answer. I can take a message or arrange a callback. Which would you prefer?";
  const t = await transferredCall('warm-unanswered', sorry);
  advanceClock(20_000); // it rings for the agent's ring_duration_ms
  await twilio.noAnswer(t.leg.sid);
  await backWithAgent(t, 'no_answer', sorry);
  // No leg and no detection to bill (never answered); the caller's time on hold in the conference is.
  expect((await chargesOf(t.callId)).map((c: any) => c.description).sort()).toEqual([expect.stringMatching(/^Inbound call from /), `Warm transfer conference (call ${t.callId}): 1 participant-min (1 participants) at 0.0018 USD/min`].sort());
});

describe('stalled transfers on the Realtime pipeline: the caller is never left on hold with nobody coming', () => {
  const failedSorry = "I'm sorry, I could not reach the person I called. I can take a message or arrange a callback. Which would you prefer?";
  afterEach(() => {
    delete twilio.dropCallbacks;
    delete twilio.refuseUpdates;
    delete twilio.holdUpdates;
  });

  it('the person\'s no-answer is settled before the caller\'s move into the conference lands (overtaken on the way): the caller, arriving late, is sent back at once', async () => {
    const sorry = "I'm sorry, the person I called did not answer. I can take a message or arrange a callback. Which would you prefer?";
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    twilio.holdUpdates = (_sid, form) => (/<Conference\b/.test(form.get('Twiml') ?? '') ? held : undefined);
    const t = await transferredCall('warm-rt-late-caller', sorry, { inConference: false });
    advanceClock(20_000);
    await twilio.noAnswer(t.leg.sid);
    // The outcome's send-back went first: the caller is on a resumed stream...
    const second = (await until(async () => t.call.stream, (s) => !!s && s !== t.first, 'the send-back'))!;
    // ...then the runtime's move lands and puts them in a conference nobody will join: its join sends them back again.
    release();
    await until(async () => t.call.documents!.some((d) => /<Conference\b/.test(d)), (x) => x, 'the late move played');
    await until(async () => t.call.stream, (s) => !!s && s !== t.first && s !== second, 'the caller back from the empty conference');
    expect(t.call.conference).toBeUndefined();
    expect(t.call.onHold).toBeUndefined();
    await backWithAgent(t, 'no_answer', sorry);
  });

  it('the person presses 1 and hangs up before joining: the transfer fails (never `connected`) and the caller comes back on a resumed stream', async () => {
    const t = await transferredCall('warm-rt-accept-hangup', failedSorry);
    await twilio.answer(t.leg.sid, { digits: '1', hangUpAfterKey: true });
    expect(t.leg.conference).toBeUndefined();
    await backWithAgent(t, 'failed', failedSorry);
  });

  it('the person\'s final status callback is lost: the recovery sweep asks the carrier at the transfer\'s deadline and brings the caller back', async () => {
    const sorry = "I'm sorry, the person I called did not answer. I can take a message or arrange a callback. Which would you prefer?";
    const t = await transferredCall('warm-rt-lost-status', sorry);
    twilio.dropCallbacks = (url, params) => url.includes('/transfer-status') && params.CallSid === t.leg.sid && params.CallStatus === 'no-answer';
    advanceClock(20_000);
    await twilio.noAnswer(t.leg.sid);
    expect((await callOf(t.callId)).transfers[0].outcome).toBeNull();
    expect(t.call.conference).toBeDefined();
    const started = Date.parse((await callOf(t.callId)).transfers[0].started_at);
    advanceClock(started + 200_000 + 1_000 - clockMs());
    await sweep();
    await backWithAgent(t, 'no_answer', sorry);
  });

  it('sending the caller back fails once (the carrier\'s 500): the sweep tries again a minute later and the caller comes back', async () => {
    const sorry = "I'm sorry, the person I called could not take your call just now. I can take a message or arrange a callback. Which would you prefer?";
    const t = await transferredCall('warm-rt-return-fails', sorry);
    let refused = 0;
    twilio.refuseUpdates = (sid) => sid === t.call.sid && ++refused === 1;
    await twilio.answer(t.leg.sid, { digits: '2' });
    expect(refused).toBe(1);
    expect(t.call.conference).toBeDefined();
    expect(t.call.stream).toBe(t.first);
    advanceClock(61_000);
    await sweep();
    await backWithAgent(t, 'declined', sorry);
    expect(refused).toBe(2);
  });
});

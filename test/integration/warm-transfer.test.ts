/**
 * Warm transfer on the relay pipeline (issue 37): the caller waits in a Twilio conference while the
 * platform dials the person, who hears a briefing made by the conversation model and presses 1 to
 * take the call; declined, unanswered or a machine, the caller goes back to the agent in a new
 * ConversationRelay session that resumes the conversation. End to end on the local runtime against
 * the Twilio stand-in (REST calls and live updates, <Gather>, conferences with their status
 * callbacks, machine detection), a ConversationRelay stand-in client and a stand-in model.
 */
import { clockMs, installTimeSource } from '../../shared/clock';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { startTwilioCarrier, twilioRelayEnv, type StandInCall, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { until } from '../support/until';

const BILLING = '+14155550171';
const SALES = '+14155550172';
let twilio: TwilioCarrierStandIn;
let model: OpenAiStandIn;
let offsetMs = 0;

const ready = (async () => {
  twilio = await startTwilioCarrier({ accountSid: 'AC0000000000000000000000000000fe37', authToken: 'warm-transfer-auth-token', now: () => clockMs() });
  model = await startOpenAiStandIn();
})();
beforeAll(() => ready);
afterAll(async () => {
  installTimeSource(undefined);
  await twilio?.close();
  await model?.close();
});

const local = usePlatform({
  get env() {
    return twilioRelayEnv(twilio, model);
  },
} as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);
const platform = () => local().platform;

/** The clock moves forward (the person talks for a while): calls' durations and charges see it. */
function advance(ms: number) {
  offsetMs += ms;
  const offset = offsetMs;
  installTimeSource({ now: () => Date.now() + offset });
}

const TRANSFER_TOOL = {
  type: 'transfer_call', mode: 'warm',
  transfer_destinations: [{ phone_number: BILLING, description: 'Billing desk: charges and refunds' }, { phone_number: SALES, mode: 'cold', description: 'Sales team' }],
};

async function relayAgent(extra: Record<string, unknown> = {}) {
  const agent = await api('POST', '/api/v1/agents', {
    body: {
      name: 'Warm desk', voice_pipeline: 'relay', prompt: 'You are the front desk of Acme.', begin_message: 'Acme, how can I help?', ring_duration_ms: 20_000,
      selected_tools: [TRANSFER_TOOL], ...extra,
    },
  });
  expect(agent.status).toBe(200);
  return agent.body.data.id as string;
}

let spare = 0;
/** A number bought through the platform (Twilio holds it with the platform's voice URL and status callback): it has prices, so minutes are charged. */
async function boughtNumber(agentId: string): Promise<string> {
  const phone = twilio.available[spare++]!;
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: phone, price: 1.15, inbound_agent_id: agentId } });
  expect(bought.status).toBe(200);
  return phone;
}

/** An incoming call from a fresh caller; the agent transfers it warm to billing with `reason`, and the caller waits in the conference. */
async function transferredCall(agentId: string, briefing = 'Dana was charged twice for order 1042 and wants the duplicate refunded.') {
  const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(agentId));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const relay = call.relay!;
  model.script({ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: BILLING, reason: 'double charge' } }] }, { text: 'Let me connect you with our billing desk.' }, { text: briefing });
  relay.say('I was charged twice, can I talk to billing?');
  await relay.closed;
  await until(async () => call.conference, (name) => !!name, 'the caller in the conference');
  const leg = await until(async () => twilio.placedTo(BILLING).find((c) => c.from === call.to), (c) => !!c, 'the person dialed');
  // The briefing is made while the person's phone rings (their `initiated`/`ringing` callbacks), before anyone answers.
  await until(() => getCall(callId), (c) => !!c.transfers?.[0]?.briefing, 'the briefing made while the phone rings');
  return { call, callId, relay, leg: leg! };
}

const getCall = async (callId: string) => (await api('GET', `/api/v1/calls/${callId}`)).body.data;
const eventsOf = async (type: string, callId: string) => (await api('GET', `/api/v1/events?type=${type}&limit=100`)).body.data.filter((e: any) => e.data?.id === callId);
const texts = (call: any) => call.transcript.map((t: any) => [t.role, t.text]);

afterEach(() => model.reset());

it('accepted: the caller holds in the conference while the person hears the model\'s briefing; 1 bridges them, the call ends `transferred`, the person\'s minutes are charged', async () => {
  const agentId = await relayAgent();
  const { call, callId, relay, leg } = await transferredCall(agentId);
  expect(relay.received.at(-1)).toEqual({ type: 'end', handoffData: JSON.stringify({ reasonCode: 'transfer', to: BILLING, mode: 'warm', description: 'Billing desk: charges and refunds', reason: 'double charge' }) });
  // The caller: <Dial><Conference> with hold audio, not starting it, ending it on leaving; the person: rung for the agent's ring_duration_ms with machine detection.
  const action = call.actions![0]!;
  expect(action.twiml).toMatch(/<Dial><Conference startConferenceOnEnter="false" endConferenceOnExit="true" beep="false" waitUrl="https:\/\/twimlets\.com\/holdmusic[^"]*"/);
  expect(call.onHold).toMatch(/holdmusic/);
  expect(twilio.conferences.get(call.conference!)!.status).toBe('init');
  // Asynchronous detection: the person hears the briefing at once, the result comes to the status callback (Twilio's reference: `Enable` to connect a person).
  expect(leg.placed).toMatchObject({ timeout: 20, machineDetection: 'Enable', asyncAmd: true, amdCallback: expect.stringMatching(/\/api\/v1\/telephony\/twilio\/transfer-status\?/) });
  expect(leg.from).toBe(call.to); // the organization's number calls the person
  const during = await getCall(callId);
  expect(during).toMatchObject({ status: 'in_progress', transfers: [{ phone_number: BILLING, mode: 'warm', outcome: null, briefing: 'Dana was charged twice for order 1042 and wants the duplicate refunded.' }] });
  // The briefing was asked of the conversation model with the conversation so far.
  const briefingRequest = model.requests.at(-1)!.body;
  expect(JSON.stringify(briefingRequest.messages)).toContain('I was charged twice, can I talk to billing?');

  advance(5_000);
  await twilio.answer(leg.sid, { digits: '1' });
  expect(leg.said).toEqual(['Dana was charged twice for order 1042 and wants the duplicate refunded.', 'Press 1 to take this call, or any other key to decline.', 'Connecting you now.']);
  expect(leg.gathered).toEqual(['1']);
  const conference = twilio.conferences.get(call.conference!)!;
  expect(conference.status).toBe('in-progress');
  expect([...conference.participants.keys()].sort()).toEqual([call.sid, leg.sid].sort());
  expect(call.onHold).toBeUndefined();
  expect((await getCall(callId)).transfers[0].outcome).toBe('connected');

  advance(90_000); // they talk for a minute and a half
  await twilio.hangUp(leg.sid);
  expect(conference.status).toBe('completed');
  expect(call.status).toBe('completed'); // the caller's <Dial> is over and nothing follows
  await platform().queue.waitForIdle();
  const ended = await until(() => getCall(callId), (c) => c.status === 'ended', 'the call ended');
  expect(ended.disconnection_reason).toBe('transferred');
  expect(texts(ended)).toEqual([
    ['agent', 'Acme, how can I help?'],
    ['user', 'I was charged twice, can I talk to billing?'],
    ['agent', 'Let me connect you with our billing desk.'],
    ['system', `Warm transfer to ${BILLING}: briefing: Dana was charged twice for order 1042 and wants the duplicate refunded.`],
    ['system', `Warm transfer to ${BILLING}: connected: the person accepted; the caller is connected to them and the agent left the call`],
  ]);
  expect(ended.tool_calls.map((t: any) => [t.name, t.result])).toEqual([['transfer_call', { transferring_to: BILLING, mode: 'warm' }]]);
  expect((await eventsOf('call.transfer_started', callId)).map((e: any) => e.data.transfer)).toEqual([expect.objectContaining({ index: 0, phone_number: BILLING, outcome: null })]);
  expect((await eventsOf('call.transferred', callId)).map((e: any) => e.data.transfer.outcome)).toEqual(['connected']);
  expect(await eventsOf('call.transfer_failed', callId)).toEqual([]);
  // As Twilio bills it: the person's leg (95 s connected: 2 minutes at the US outbound price of Pricing v2), its machine detection (one),
  // the conference's participant minutes (the caller ~95 s on hold and talking, the person 90 s: 2 + 2), and the caller's own minutes as any call's.
  const charges = (await api('GET', '/api/v1/billing/charges?limit=100')).body.data.filter((c: any) => c.resource_id === callId);
  expect(charges.map((c: any) => [c.description, c.amount]).sort()).toEqual([
    [`Inbound call from ${call.from}: ${Math.ceil(ended.duration_sec / 60)} min at 0.0085 USD/min`, Number((Math.ceil(ended.duration_sec / 60) * 0.0085).toFixed(4))],
    [`Warm transfer to ${BILLING} (call ${callId}): 2 min at 0.014 USD/min`, 0.028],
    [`Answering machine detection on the warm transfer to ${BILLING} (call ${callId}): 1 detection at 0.0075 USD`, 0.0075],
    [`Warm transfer conference (call ${callId}): 4 participant-min (2 participants) at 0.0018 USD/min`, 0.0072],
  ].sort());
  // The analysis sees each leg's outcome.
  const analysed = await until(() => getCall(callId), (c) => !!c.analysis, 'the analysis');
  expect(analysed.analysis.custom.transfers).toEqual([{ phone_number: BILLING, mode: 'warm', outcome: 'connected' }]);
});

async function expectBackWithAgent(call: StandInCall, callId: string, outcome: string, greeting: string) {
  await until(async () => call.relays?.length ?? 0, (n) => n === 2, `the caller back in a new ConversationRelay session (${JSON.stringify({ docs: call.documents, failures: call.failures, refusals: call.refusals, conf: call.conference })})`);
  const resumed = call.documents!.at(-1)!;
  expect(resumed).toContain(`welcomeGreeting="${greeting.replace(/'/g, '&#39;')}"`.replace('&#39;', "'"));
  expect(resumed).toMatch(/<Parameter name="resume" value="0"\/>/);
  expect(call.conference).toBeUndefined();
  const back = call.relays![1]!;
  model.script({ text: 'Of course. What message shall I pass on?' });
  back.say('Please ask them to call me back.');
  await back.until(() => back.replies().length === 1, 'the agent goes on');
  // The resumed session's model request has the whole conversation, the greeting included.
  const history = JSON.stringify(model.requests.at(-1)!.body.messages);
  expect(history).toContain('I was charged twice');
  expect(history).toContain(greeting.slice(0, 30));
  await platform().relay.idle();
  await twilio.hangUp(call.sid);
  await platform().relay.idle();
  await platform().queue.waitForIdle();
  const ended = await until(() => getCall(callId), (c) => c.status === 'ended' && c.transcript.length >= 8, 'the call ended with its transcript');
  expect(ended.disconnection_reason).toBe('completed');
  expect(ended.transfers).toEqual([expect.objectContaining({ phone_number: BILLING, mode: 'warm', outcome })]);
  expect(texts(ended).slice(2)).toEqual([
    ['agent', 'Let me connect you with our billing desk.'],
    ['system', expect.stringMatching(new RegExp(`^Warm transfer to \\${BILLING}: briefing: `))],
    ['system', expect.stringMatching(new RegExp(`^Warm transfer to \\${BILLING}: ${outcome}: `))],
    ['agent', greeting],
    ['user', 'Please ask them to call me back.'],
    ['agent', 'Of course. What message shall I pass on?'],
  ]);
  expect((await eventsOf('call.transfer_failed', callId)).map((e: any) => e.data.transfer.outcome)).toEqual([outcome]);
  expect(await eventsOf('call.transferred', callId)).toEqual([]);
  return ended;
}

it('declined: another key sends the caller back to the agent, which says so and goes on; a leg over within its first second costs nothing', async () => {
  const { call, callId, leg } = await transferredCall(await relayAgent());
  advance(30_000);
  // The person answers and declines within one second of the carrier's clock: held still while they do,
  // so a loaded machine's real milliseconds cannot carry the leg into a billed second.
  const frozen = clockMs();
  installTimeSource({ now: () => frozen });
  await twilio.answer(leg.sid, { digits: '2' });
  advance(0);
  expect(leg.said!.at(-1)).toBe('Thank you. The caller will be told you could not take the call. Goodbye.');
  expect(leg.status).toBe('completed');
  await expectBackWithAgent(call, callId, 'declined', "I'm sorry, the person I called could not take your call just now. I can take a message or arrange a callback. Which would you prefer?");
  const legCharge = (await api('GET', '/api/v1/billing/charges?limit=100')).body.data.filter((c: any) => c.resource_id === callId && c.description.startsWith('Warm transfer to'));
  expect(legCharge).toHaveLength(0); // answered and hung up within the same second: nothing to bill
});

it('a briefing nobody answers with a key (the <Gather> times out) is declined', async () => {
  const { call, callId, leg } = await transferredCall(await relayAgent());
  await twilio.answer(leg.sid); // no key: actionOnEmptyResult asks the action with empty Digits
  expect(leg.gathered).toEqual(['']);
  await expectBackWithAgent(call, callId, 'declined', "I'm sorry, the person I called could not take your call just now. I can take a message or arrange a callback. Which would you prefer?");
});

it('unanswered: the person\'s phone rings out (no-answer) and the caller goes back to the agent', async () => {
  const { call, callId, leg } = await transferredCall(await relayAgent());
  await twilio.noAnswer(leg.sid);
  await expectBackWithAgent(call, callId, 'no_answer', "I'm sorry, the person I called did not answer. I can take a message or arrange a callback. Which would you prefer?");
});

it('a machine answers (asynchronous detection\'s AnsweredBy): the platform hangs up on it and the caller goes back to the agent', async () => {
  const { call, callId, leg } = await transferredCall(await relayAgent());
  await twilio.answer(leg.sid, { answeredBy: 'machine_start' });
  expect(leg.status).toBe('completed');
  // The instructions were asked at once (no AnsweredBy): the result came to the status callback before the briefing's first words played.
  expect(leg.said ?? []).toEqual([]);
  await expectBackWithAgent(call, callId, 'machine', "I'm sorry, I reached a voicemail rather than the person. I can take a message or arrange a callback. Which would you prefer?");
});

it('a caller who hangs up while waiting ends the call: the transfer fails and the person\'s ringing call is cancelled', async () => {
  const { call, callId, leg } = await transferredCall(await relayAgent());
  await twilio.hangUp(call.sid); // alone in the conference: the last one out ends it
  expect(twilio.conferences.get(call.conference ?? `transfer-${callId}-0`)!.status).toBe('completed');
  await until(async () => leg.status, (s) => s === 'canceled', 'the person\'s call cancelled');
  await platform().queue.waitForIdle();
  const ended = await until(() => getCall(callId), (c) => c.status === 'ended', 'the call ended');
  expect(ended).toMatchObject({ disconnection_reason: 'completed', transfers: [expect.objectContaining({ outcome: 'failed' })] });
  expect((await eventsOf('call.transfer_failed', callId)).map((e: any) => e.data.transfer.outcome)).toEqual(['failed']);
  expect(call.relays).toHaveLength(1); // nobody to send back
});

it('refuses to the model a number that is not a destination; a cold destination is today\'s <Dial>', async () => {
  const agentId = await relayAgent();
  const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(agentId));
  const relay = call.relay!;
  model.script(
    { toolCalls: [{ name: 'transfer_call', arguments: { phone_number: '+14155550999' } }] },
    { text: 'I can only transfer you to billing or sales.' },
  );
  relay.say('Put me through to the CEO.');
  await relay.until(() => relay.replies().length === 1, 'the refusal');
  const offered = model.requests.at(-2)!.body.tools.find((t: any) => t.function.name === 'transfer_call').function;
  expect(offered.parameters.properties.phone_number.enum).toEqual([BILLING, SALES]);
  expect(offered.description).toContain('Billing desk: charges and refunds');
  const toolMessage = model.requests.at(-1)!.body.messages.find((m: any) => m.role === 'tool');
  // The argument's schema lists the destinations, so the engine refuses another number before the tool runs (the executor would too).
  expect(toolMessage.content).toContain(`must be one of ${BILLING}, ${SALES}`);
  expect(relay.open).toBe(true);
  model.script({ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: SALES } }] }, { text: 'Transferring you to sales.' });
  relay.say('Sales then.');
  await relay.closed;
  await until(async () => call.actions?.length ?? 0, (n) => n > 0, 'the <Connect action>');
  await call.after;
  expect(call.actions![0]!.params.HandoffData).toBe(JSON.stringify({ reasonCode: 'transfer', to: SALES }));
  expect(call.actions![0]!.twiml).toMatch(/<Dial timeout="20">\+14155550172<\/Dial>/);
  expect(call.dialled).toBe(SALES);
  expect(twilio.placedTo(SALES)).toEqual([]);
  await twilio.hangUp(call.sid);
});

it('answers 400 naming the path for a bad warm-transfer setting', async () => {
  const bad = async (tool: Record<string, unknown>) => {
    const res = await api('POST', '/api/v1/agents', { body: { name: 'Bad', selected_tools: [tool] } });
    expect(res.status).toBe(400);
    return res.body.error.details.fields.map((f: any) => f.path);
  };
  expect(await bad({ type: 'transfer_call', phone_number: BILLING, mode: 'lukewarm' })).toEqual(['selected_tools.0.mode']);
  const eleven = Array.from({ length: 11 }, (_, i) => ({ phone_number: `+1415555020${String(i).padStart(2, '0')}`.slice(0, 12), description: `Desk ${i}` }));
  expect(await bad({ type: 'transfer_call', transfer_destinations: eleven })).toEqual(['selected_tools.0.transfer_destinations']);
  expect(await bad({ type: 'transfer_call', transfer_destinations: [{ phone_number: BILLING }] })).toEqual(['selected_tools.0.transfer_destinations.0.description']);
  expect(await bad({ type: 'transfer_call', transfer_destinations: [{ phone_number: '555-0100', description: 'Desk' }] })).toEqual(['selected_tools.0.transfer_destinations.0.phone_number']);
  expect(await bad({ type: 'transfer_call', transfer_destinations: [{ phone_number: BILLING, description: 'A' }, { phone_number: BILLING, description: 'B' }] })).toEqual(['selected_tools.0.transfer_destinations.1.phone_number']);
  expect(await bad({ type: 'transfer_call', mode: 'warm' })).toEqual(['selected_tools.0.phone_number']);
  expect(await bad({ type: 'end_call', mode: 'warm' })).toEqual(['selected_tools.0.mode']);
  const ok = await api('POST', '/api/v1/agents', { body: { name: 'Good', selected_tools: [TRANSFER_TOOL] } });
  expect(ok.status).toBe(200);
  expect(ok.body.data.selected_tools).toEqual([TRANSFER_TOOL]);
});

/**
 * The relay terminal client (`npm run relay`, scripts/relay-terminal.ts) plays Twilio's part of a
 * ConversationRelay call against the local runtime on the simulated carrier (issue 42, item 6): the
 * incoming call through the platform's signed voice URL, the session, and at its end the signed
 * `<Connect action>` with the `end` message's HandoffData, playing what it answers. A warm transfer
 * goes through the same code as on Twilio: accepted (a destination ending 0–4), the caller is in the
 * conference and the call ends `transferred` when the person hangs up (`conference-end`); declined
 * (5), the action answers a new session that resumes the conversation with what became of it.
 */
import { TerminalCall, type TerminalResult } from '../../scripts/relay-terminal';
import { usePlatform } from '../support/platform';

const SID = 'AC0000000000000000000000000000fe42';
const TOKEN = 'relay-terminal-token';
const local = usePlatform({ env: { TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const getCall = async (callId: string) => (await api('GET', `/api/v1/calls/${callId}`)).body.data;
const eventsOf = async (type: string, callId: string) => (await api('GET', `/api/v1/events?type=${type}&limit=100`)).body.data.filter((e: any) => e.data?.id === callId);
const texts = (call: any) => call.transcript.map((t: any) => [t.role, t.text]);

async function relayAgent(to: string): Promise<string> {
  const agent = await api('POST', '/api/v1/agents', {
    body: { name: 'Relay desk', voice_pipeline: 'relay', begin_message: 'Acme, how can I help?', selected_tools: [{ type: 'transfer_call', mode: 'warm', phone_number: to }, { type: 'end_call' }] },
  });
  expect(agent.status).toBe(200);
  return agent.body.data.id;
}

/** The terminal's call of `agentId`; `hangUp` makes the simulated person hang up in a conference. */
function terminal(agentId: string, authToken: string | undefined = TOKEN) {
  let hangUp!: () => void;
  const personHungUp = new Promise<void>((resolve) => (hangUp = resolve));
  const call = new TerminalCall({ url: local().url, apiKey: local().key, authToken, accountSid: SID, agentId, from: '+14155550142', write: () => undefined, personTalks: () => personHungUp });
  const done: Promise<TerminalResult> = call.run();
  return { call, done, hangUp };
}

const BRIEFING = 'Incoming transfer from the AI agent. Caller: +14155550142. Reason: double charge. What was done: the agent spoke with them for 2 turns. Still needed: a person to take over the call.';
const TOOL_REPLY = (to: string) => `The transfer_call tool answered: {"transferring_to":"${to}","mode":"warm"}`;

it('accepted: the action answers the conference; the terminal shows the briefing and the outcome; the person hangs up and the call ends `transferred`', async () => {
  const to = '+14155550171';
  const { call, done, hangUp } = terminal(await relayAgent(to));
  await call.until((out) => out.includes('agent> Acme, how can I help?'), 'the greeting');
  call.input('Hi, I was charged twice.');
  call.input('transfer_call reason="double charge"');
  await call.until((out) => out.includes('[the person joined'), 'the conference');
  const callId = call.result.callId!;
  // The <Connect action>, signed, with the end message's HandoffData, as Twilio requests it.
  expect(call.result.actions).toHaveLength(1);
  const [action] = call.result.actions;
  expect(action!.url).toContain('/api/v1/telephony/twilio/relay-action?');
  expect(action!.params).toMatchObject({ CallSid: call.callSid, SessionStatus: 'ended', HandoffData: JSON.stringify({ reasonCode: 'transfer', to, mode: 'warm', reason: 'double charge' }) });
  expect(action!.status).toBe(200);
  expect(action!.twiml).toMatch(/<Dial><Conference startConferenceOnEnter="false" endConferenceOnExit="true"/);
  expect(call.output).toContain(`[warm transfer to ${to}: the person heard: "${BRIEFING}"]`);
  expect(call.output).toContain(`[warm transfer to ${to}: connected]`);
  const during = await getCall(callId);
  expect(during).toMatchObject({ status: 'in_progress', transfers: [{ phone_number: to, mode: 'warm', outcome: 'connected', briefing: BRIEFING }] });

  hangUp();
  const result = await done;
  expect(result).toMatchObject({ end: 'transferred-warm', sessions: 1 });
  expect(call.output).toContain('[the person hung up: the conference ends]');
  await local().platform.queue.waitForIdle();
  const ended = await getCall(callId);
  expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'transferred', direction: 'inbound' });
  expect(texts(ended)).toEqual([
    ['agent', 'Acme, how can I help?'],
    ['user', 'Hi, I was charged twice.'],
    ['agent', "I'm sorry, I don't have information about that."],
    ['user', 'transfer_call reason="double charge"'],
    ['agent', TOOL_REPLY(to)],
    ['system', `Warm transfer to ${to}: briefing: ${BRIEFING}`],
    ['system', `Warm transfer to ${to}: connected: the person accepted; the caller is connected to them and the agent left the call`],
  ]);
  expect((await eventsOf('call.transfer_started', callId)).map((e: any) => e.data.transfer.phone_number)).toEqual([to]);
  expect((await eventsOf('call.transferred', callId)).map((e: any) => e.data.transfer.outcome)).toEqual(['connected']);
  expect(await eventsOf('call.transfer_failed', callId)).toEqual([]);
});

it('declined: the action answers a session that resumes the conversation; the agent says so, goes on, and its end_call is played through the next action', async () => {
  const to = '+14155550175';
  const { call, done } = terminal(await relayAgent(to));
  await call.until((out) => out.includes('agent> Acme, how can I help?'), 'the greeting');
  call.input('Hi, I was charged twice.');
  call.input('transfer_call reason="double charge"');
  await call.until((out) => out.includes('agent> I\'m sorry, the person I called'), 'the resumed session\'s greeting');
  call.input('Please take a message then.');
  call.input('Goodbye.');
  const result = await done;
  const callId = result.callId!;
  expect(result).toMatchObject({ end: 'agent-hung-up', sessions: 2 });
  // Two actions: the warm transfer's (a resumed session), then end_call's (a hang-up).
  expect(result.actions.map((a) => [a.status, JSON.parse(a.params.HandoffData!).reasonCode])).toEqual([[200, 'transfer'], [200, 'end-call']]);
  const greeting = "I'm sorry, the person I called could not take your call just now. I can take a message or arrange a callback. Which would you prefer?";
  expect(result.actions[0]!.twiml).toContain(`welcomeGreeting="${greeting.replace(/'/g, "'")}"`);
  expect(result.actions[0]!.twiml).toContain('<Parameter name="resume" value="0"/>');
  expect(result.actions[1]!.twiml).toMatch(/<Hangup\/>/);
  expect(call.output).toContain(`[warm transfer to ${to}: the person heard: "${BRIEFING}"]`);
  expect(call.output).toContain(`[warm transfer to ${to}: declined: the caller is back with the agent]`);
  expect(call.output).toContain(`agent> ${greeting}`);
  await local().platform.queue.waitForIdle();
  const ended = await getCall(callId);
  expect(ended.status).toBe('ended');
  expect(ended.disconnection_reason).not.toBe('transferred');
  expect(ended.transfers).toEqual([{ phone_number: to, mode: 'warm', started_at: expect.any(String), outcome: 'declined', briefing: BRIEFING }]);
  expect(texts(ended)).toEqual([
    ['agent', 'Acme, how can I help?'],
    ['user', 'Hi, I was charged twice.'],
    ['agent', "I'm sorry, I don't have information about that."],
    ['user', 'transfer_call reason="double charge"'],
    ['agent', TOOL_REPLY(to)],
    ['system', `Warm transfer to ${to}: briefing: ${BRIEFING}`],
    ['system', `Warm transfer to ${to}: declined: the person declined the call; the caller is back with the agent`],
    ['agent', greeting],
    ['user', 'Please take a message then.'],
    ['agent', "I'm sorry, I don't have information about that."],
    ['user', 'Goodbye.'],
    ['agent', 'Thank you for talking with me. Goodbye!'],
  ]);
  expect((await eventsOf('call.transfer_failed', callId)).map((e: any) => e.data.transfer.outcome)).toEqual(['declined']);
});

it('the caller hangs up in the conference (/quit): the conference ends and so does the call, `transferred`', async () => {
  const to = '+14155550173';
  const { call, done } = terminal(await relayAgent(to));
  await call.until((out) => out.includes('agent> Acme'), 'the greeting');
  for (const line of ['transfer_call reason="a refund"', 'Hello?', '/quit']) call.input(line);
  const result = await done;
  expect(result.end).toBe('transferred-warm');
  expect(call.output).toContain('[you hung up: the conference ends]');
  await local().platform.queue.waitForIdle();
  expect(await getCall(result.callId!)).toMatchObject({ status: 'ended', disconnection_reason: 'transferred', transfers: [{ outcome: 'connected' }] });
});

it('a cold transfer: the action answers <Dial>; the agent is gone and the call ends `transferred`, with no transfers[]', async () => {
  const to = '+14155550174';
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Cold desk', voice_pipeline: 'relay', begin_message: 'Acme, how can I help?', selected_tools: [{ type: 'transfer_call', phone_number: to }] } });
  const { call, done } = terminal(agent.body.data.id);
  await call.until((out) => out.includes('agent> Acme'), 'the greeting');
  call.input('transfer_call reason="sales"');
  const result = await done;
  expect(result.end).toBe('transferred-cold');
  expect(result.actions.map((a) => [JSON.parse(a.params.HandoffData!), a.twiml.match(/<Dial[^>]*>[^<]*<\/Dial>/)?.[0]])).toEqual([[{ reasonCode: 'transfer', to }, `<Dial timeout="30">${to}</Dial>`]]);
  expect(call.output).toContain(`[the call is transferred to ${to} (cold): the agent left the call]`);
  await local().platform.queue.waitForIdle();
  expect(await getCall(result.callId!)).toMatchObject({ status: 'ended', disconnection_reason: 'transferred', transfers: [] });
});

it('without the platform\'s auth token the action is refused: the terminal says how to sign', async () => {
  const to = '+14155550172';
  let twiml = '';
  const agentId = await relayAgent(to);
  const call = new TerminalCall({
    url: local().url, apiKey: local().key, agentId, write: () => undefined,
    // The call made in this process, as the command does without a token.
    inProcessAnswer: async (number, from, callSid) => {
      const { createInboundCall } = await import('../../shared/domain/calls/inbound');
      const { relayInstructions } = await import('../../shared/domain/relay/twiml');
      const answer = await createInboundCall({ to: number, from, providerCallId: callSid, provider: 'twilio' });
      if (answer.answer === 'reject') return { rejected: answer.reason };
      twiml = (await relayInstructions(answer.call))!.body;
      return { twiml };
    },
  });
  const done = call.run();
  await call.until((out) => out.includes('agent> Acme'), 'the greeting');
  call.input('transfer_call reason="a refund"');
  const result = await done;
  expect(twiml).toContain('<ConversationRelay');
  expect(result.end).toBe('refused');
  expect(result.actions.map((a) => a.status)).toEqual([401]);
  expect(call.output).toContain('TWILIO_AUTH_TOKEN=local-token npm start');
});

it('the caller hangs up (/quit) in the session: the call ends once, its conversation written once, analysed once', async () => {
  const { call, done } = terminal(await relayAgent('+14155550171'));
  await call.until((out) => out.includes('agent> Acme'), 'the greeting');
  call.input('Hello there.');
  await call.until((out) => out.split('agent> ').length > 2, 'the reply');
  call.input('/quit');
  const result = await done;
  await local().platform.queue.waitForIdle();
  // The action after the hang-up (CallStatus completed) finds the call ended and its conversation written: it writes nothing again.
  expect(result.actions.map((a) => a.params.CallStatus)).toEqual(['completed']);
  expect(await getCall(result.callId!)).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
  expect(await eventsOf('call.ended', result.callId!)).toHaveLength(1);
  expect(await eventsOf('call.analyzed', result.callId!)).toHaveLength(1);
});

/**
 * Agent-to-agent hand-off on the Realtime pipeline (issue 37; docs/api.md, "Hand-offs" → "On
 * calls"), end to end on the local runtime: an inbound call from the Twilio stand-in (its number's
 * webhook, the media stream to the voice runtime), the scripted Realtime stand-in playing the
 * model. Agent A hands the call to agent B, and B hands it back to A (B lists A in its own
 * `handoff_agents`): each switch is a `session.update` with the target's filled prompt and tools
 * (the voice left as it is: the model has spoken), sent before the tool's output and the next
 * `response.create`, so the next reply is the target's. The call keeps one transcript, its
 * `segments` and one `conversation.handed_off` per switch; billing is the call's minutes.
 */
import { clockMs } from '../../shared/clock';
import { uniquePhone } from '../support/numbers';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { mulawRecording } from '../support/twilio-media-client';
import { until } from '../support/until';
import { useVoiceCallWiring } from '../support/voice-call-wiring';
import type { ModelConnection } from '../support/realtime-stand-in';

const SID = 'AC0000000000000000000000000000f037';
const TOKEN = 'handoff-realtime-token';
let twilio: TwilioCarrierStandIn;
const ready = startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() }).then((t) => (twilio = t));
beforeAll(() => ready);
afterAll(() => twilio?.close());

const { api, scripts, advanceClock, callOf, chargesOf, eventsOf } = useVoiceCallWiring(() => ({
  TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN,
}));

const tone = (seconds: number, seed: number) => mulawRecording(seconds, seed);
const texts = (call: any) => call.transcript.map((t: any) => [t.role, t.text]);
const toolNames = (update: any) => (update.session.tools ?? []).map((t: any) => t.name);

async function agent(body: Record<string, unknown>): Promise<string> {
  const created = await api('POST', '/api/v1/agents', { body: { name: 'Desk', reminder_trigger_ms: 0, ...body } });
  expect(created.status).toBe(200);
  return created.body.data.id;
}

/** A number bought from the Twilio stand-in (its minutes priced, so the call is charged), answered by `agentId`. */
async function boughtNumber(agentId: string): Promise<string> {
  const available = await api('GET', '/api/v1/phone-numbers/available?country=us&area_code=415&limit=1');
  const choice = available.body.data[0];
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price, per_minute_price_inbound: 0.0085, inbound_agent_id: agentId } });
  expect(bought.status).toBe(200);
  return choice.phone_number;
}

it('hands a call from agent A to agent B and back: each reply from the agent handling it, one transcript, segments, events, billing', async () => {
  const seen: { updates: any[]; outputs: any[]; creates: any[] } = { updates: [], outputs: [], creates: [] };
  /** One turn of the caller's that the agent answers by handing off: the switch is the target's session first, then the tool's output, then its reply. */
  const handOffTurn = async (m: ModelConnection, n: number, says: string, answer: string, to: string, reason: string, reply: string) => {
    m.userSays(`u${n}`, says);
    m.speak({ responseId: `r${n}a`, itemId: `i${n}a`, audio: tone(0.2, n), transcript: answer, calls: [{ callId: `c${n}`, name: 'handoff_to_agent', args: { agent_id: to, reason } }] });
    seen.updates.push(await m.next('session.update'));
    seen.outputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === `c${n}`));
    seen.creates.push(await m.next('response.create'));
    m.speak({ responseId: `r${n}b`, itemId: `i${n}b`, audio: tone(0.2, n + 10), transcript: reply });
  };
  scripts.set('handoff-ab', async (m) => {
    seen.updates.push(await m.next('session.update'));
    seen.creates.push(await m.next('response.create'));
    m.speak({ responseId: 'r0', itemId: 'i0', audio: tone(0.2, 20), transcript: 'Front desk, Ann speaking.' });
    await m.until(() => m.inputAudio().length >= 800, 'caller audio');
    await handOffTurn(m, 1, 'I have a question about my bill.', 'Let me pass you to billing.', ids.b, 'a billing question', 'Billing, Bob here. How can I help?');
    // The caller answers once Bob's words have played (their audio comes after the marks' echoes).
    await m.until(() => m.inputAudio().length >= 2 * 1600, 'the caller answering Bob');
    await handOffTurn(m, 2, 'Actually, I need to change my address.', 'The front desk does that; back you go.', ids.a, 'address change', 'Front desk again: what is the new address?');
    await m.closed;
  });
  const ids = { a: '', b: '' };
  ids.a = await agent({ agent_name: 'Ann', s2s_model: 'handoff-ab', voice_id: 'alloy', prompt: 'You are {{agent_name}} at the front desk.', begin_message: 'Front desk, {{agent_name}} speaking.' });
  ids.b = await agent({
    agent_name: 'Bob', voice_id: 'verse', prompt: 'You are {{agent_name}} in billing. The caller is {{customer}}.',
    handoff_agents: [{ agent_id: ids.a, description: 'The front desk: addresses, anything not about bills' }],
  });
  const patched = await api('PATCH', `/api/v1/agents/${ids.a}`, { body: { handoff_agents: [{ agent_id: ids.b, description: 'Billing: invoices, payments, refunds' }] } });
  expect(patched.status).toBe(200);

  const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(ids.a));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const stream = call.stream!;
  await stream.until(() => stream.media.length > 0, 'the greeting');
  await stream.play(tone(0.2, 9));
  await stream.until(() => Buffer.concat(stream.media).length >= 3 * 1600, "Bob's first words");
  await stream.play(tone(0.2, 10));
  await until(async () => seen.creates.length, (n) => n === 3, 'the reply after the hand-back');
  await stream.until(() => Buffer.concat(stream.media).length >= 5 * 1600, 'the last reply played');
  advanceClock(65_000); // the call lasted a minute and a bit: two minutes billed
  await twilio.hangUp(call.sid);

  // A's session, then B's (its prompt with its own variables, its tools), then A's again; the voice never sent again: the model had spoken.
  const [first, toB, toA] = seen.updates;
  expect(first.session.instructions).toBe('You are Ann at the front desk.');
  expect(first.session.audio.output.voice).toBe('alloy');
  expect(toolNames(first)).toEqual(['handoff_to_agent']);
  expect(first.session.tools[0].parameters.properties.agent_id.enum).toEqual([ids.b]);
  expect(toB.session.instructions).toMatch(/^You are Bob in billing\./);
  expect(toB.session.tools.find((t: any) => t.name === 'handoff_to_agent').parameters.properties.agent_id.enum).toEqual([ids.a]);
  expect(toB.session.audio).toBeUndefined();
  expect(toA.session.instructions).toBe('You are Ann at the front desk.');
  expect(JSON.parse(seen.outputs[0].item.output)).toMatchObject({ handed_off_to: ids.b, agent_name: 'Bob', reason: 'a billing question' });
  expect(JSON.parse(seen.outputs[1].item.output)).toMatchObject({ handed_off_to: ids.a, agent_name: 'Ann', reason: 'address change' });

  const ended = await until(() => callOf(callId), (c) => c.status === 'ended' && !!c.transcript?.length && !!c.tool_calls?.length, 'the call ended and its conversation written (the stream record may land after the end: calls/voice-session.ts)');
  expect(texts(ended)).toEqual([
    ['agent', 'Front desk, Ann speaking.'],
    ['user', 'I have a question about my bill.'],
    ['agent', 'Let me pass you to billing.'],
    ['agent', 'Billing, Bob here. How can I help?'],
    ['user', 'Actually, I need to change my address.'],
    ['agent', 'The front desk does that; back you go.'],
    ['agent', 'Front desk again: what is the new address?'],
  ]);
  expect(ended.tool_calls.map((t: any) => [t.name, t.arguments.agent_id])).toEqual([['handoff_to_agent', ids.b], ['handoff_to_agent', ids.a]]);
  expect(ended.segments.map((s: any) => [s.agent_id, s.reason])).toEqual([[ids.a, null], [ids.b, 'a billing question'], [ids.a, 'address change']]);
  expect(ended.agent_id).toBe(ids.a);
  const events = (await api('GET', '/api/v1/events?type=conversation.handed_off&limit=100')).body.data.filter((e: any) => e.data.conversation.id === callId);
  expect(events.map((e: any) => [e.data.from.agent_id, e.data.to.agent_id]).reverse()).toEqual([[ids.a, ids.b], [ids.b, ids.a]]);
  expect(await eventsOf('call.ended', callId)).toHaveLength(1);
  // One call, one charge for its minutes, whoever handled it.
  expect(ended.duration_sec).toBeGreaterThanOrEqual(65);
  expect(await chargesOf(callId)).toEqual([expect.objectContaining({ reason: 'call_minutes', amount: 2 * 0.0085, description: expect.stringMatching(/: 2 min at 0.0085 USD\/min$/) })]);
});

it('hands off before the model has spoken: the target\'s voice goes with its session; a hand-off to an agent not listed is refused to the model and changes nothing', async () => {
  const updates: any[] = [];
  const outputs: any[] = [];
  scripts.set('handoff-quiet', async (m) => {
    updates.push(await m.next('session.update'));
    // The caller speaks first (start_speaker user); the model answers with a function call only.
    await m.until(() => m.inputAudio().length >= 800, 'caller audio');
    m.userSays('u1', 'Hola, ¿hablan español?');
    m.speak({ responseId: 'r1', itemId: 'i1', calls: [{ callId: 'c1', name: 'handoff_to_agent', args: { agent_id: '01a00000-0000-7000-8000-000000000000' } }] });
    outputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'c1'));
    await m.next('response.create');
    m.speak({ responseId: 'r2', itemId: 'i2', calls: [{ callId: 'c2', name: 'handoff_to_agent', args: { agent_id: spanish, reason: 'Spanish speaker' } }] });
    updates.push(await m.next('session.update'));
    outputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'c2'));
    await m.next('response.create');
    m.speak({ responseId: 'r3', itemId: 'i3', audio: tone(0.2, 30), transcript: 'Hola, soy Sofía. ¿En qué puedo ayudarle?' });
    await m.closed;
  });
  const spanish = await agent({ agent_name: 'Sofía', voice_id: 'coral', prompt: 'Eres {{agent_name}}.' });
  const front = await agent({
    agent_name: 'Ann', s2s_model: 'handoff-quiet', voice_id: 'alloy', start_speaker: 'user', prompt: 'You are {{agent_name}}.',
    handoff_agents: [{ agent_id: spanish, description: 'Spanish-speaking callers' }],
  });
  const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(front));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const stream = call.stream!;
  await stream.play(tone(0.2, 31));
  await stream.until(() => stream.media.length > 0, 'Sofía speaking');
  await until(async () => updates.length, (n) => n === 2, 'the switch');
  expect(JSON.parse(outputs[0].item.output).error).toMatch(/one of/);
  expect(updates[0].session.audio.output.voice).toBe('alloy');
  // No assistant audio yet in the session: the Realtime API still takes a voice, so Sofía's goes with her instructions.
  expect(updates[1].session).toMatchObject({ instructions: 'Eres Sofía.', audio: { output: { voice: 'coral' } } });
  expect(JSON.parse(outputs[1].item.output)).toMatchObject({ handed_off_to: spanish, agent_name: 'Sofía' });
  await stream.until(() => Buffer.concat(stream.media).length >= 1600, 'her words played', 30_000);
  await twilio.hangUp(call.sid);
  const ended = await until(() => callOf(callId), (c) => c.status === 'ended' && !!c.transcript?.length && !!c.tool_calls?.length, 'the call ended and its conversation written (the stream record may land after the end: calls/voice-session.ts)');
  expect(ended.segments.map((s: any) => [s.agent_id, s.reason])).toEqual([[front, null], [spanish, 'Spanish speaker']]);
  expect(ended.tool_calls.map((t: any) => t.name)).toEqual(['handoff_to_agent', 'handoff_to_agent']);
  expect(texts(ended)).toEqual([['user', 'Hola, ¿hablan español?'], ['agent', 'Hola, soy Sofía. ¿En qué puedo ayudarle?']]);
});

it('a call handed off and then back from a warm transfer nobody answered resumes with the agent it was handed to', async () => {
  const BILLING_DESK = '+14155550182';
  const resumed: { update?: any; create?: any } = {};
  let connections = 0;
  scripts.set('handoff-then-transfer', async (m) => {
    if (++connections === 2) {
      resumed.update = await m.next('session.update');
      resumed.create = await m.next('response.create');
      m.speak({ responseId: 'r9', itemId: 'i9', audio: tone(0.2, 49), transcript: 'Sorry, billing did not answer. Shall I take a message?' });
      return m.closed;
    }
    await m.next('session.update');
    await m.next('response.create');
    m.speak({ responseId: 'r0', itemId: 'i0', audio: tone(0.2, 40), transcript: 'Front desk.' });
    await m.until(() => m.inputAudio().length >= 800, 'caller audio');
    m.userSays('u1', 'Billing, please, a person.');
    m.speak({ responseId: 'r1', itemId: 'i1', calls: [{ callId: 'c1', name: 'handoff_to_agent', args: { agent_id: billing } }] });
    await m.next('session.update');
    await m.next('response.create');
    m.speak({ responseId: 'r2', itemId: 'i2', audio: tone(0.2, 41), transcript: 'Billing here; connecting you to a person.', calls: [{ callId: 'c2', name: 'transfer_call', args: {} }] });
    await m.closed;
  });
  const billing = await agent({ agent_name: 'Bob', s2s_model: 'handoff-then-transfer', voice_id: 'verse', prompt: 'You are {{agent_name}} in billing.', selected_tools: [{ type: 'transfer_call', phone_number: BILLING_DESK, mode: 'warm' }] });
  const front = await agent({ agent_name: 'Ann', s2s_model: 'handoff-then-transfer', voice_id: 'alloy', prompt: 'You are {{agent_name}}.', begin_message: 'Front desk.', handoff_agents: [{ agent_id: billing, description: 'Billing' }] });
  const call = await twilio.incomingCall(uniquePhone(), await boughtNumber(front));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const first = call.stream!;
  await first.until(() => first.media.length > 0, 'the greeting');
  await first.play(tone(0.2, 42));
  const leg = (await until(async () => twilio.placedTo(BILLING_DESK).find((c) => c.status === 'queued'), (c) => !!c, 'the person dialed'))!;
  advanceClock(20_000);
  await twilio.noAnswer(leg.sid);
  const back = (await until(async () => call.stream, (s) => !!s && s !== first, 'the caller back'))!;
  await back.until(() => Buffer.concat(back.media).length >= 1600, 'the agent saying so', 30_000);
  // The resumed session is Bob's (the call's last segment), not Ann's (the agent it started with): a new session, so his voice too.
  expect(resumed.update.session.instructions).toBe('You are Bob in billing.');
  expect(resumed.update.session.audio.output.voice).toBe('verse');
  expect(resumed.update.session.tools.map((t: any) => t.name)).toEqual(['transfer_call']);
  expect(resumed.create.response.instructions).toMatch(/did not answer/);
  await twilio.hangUp(call.sid);
  // Both streams' records: the first's (its tool calls) and the resumed one's (its last line); each may land after the end (calls/voice-session.ts).
  const ended = await until(
    () => callOf(callId),
    (c) => c.status === 'ended' && !!c.tool_calls?.length && !!c.transcript?.some((t: any) => t.role === 'agent' && /did not answer/.test(t.text)),
    'the call ended and both streams\' conversation written',
  );
  expect(ended.segments.map((s: any) => s.agent_id)).toEqual([front, billing]);
  expect(ended.transfers.map((t: any) => t.outcome)).toEqual(['no_answer']);
  expect(texts(ended).at(-1)).toEqual(['agent', 'Sorry, billing did not answer. Shall I take a message?']);
});

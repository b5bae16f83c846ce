/**
 * The synthesized stack (issue 41), calls: Twilio's stand-in drives each call as Twilio would
 * (the number's voice URL the platform set when it bought it, signed requests, ConversationRelay
 * sessions at the WebSocket API, Media Streams at the voice runtime's task, status callbacks).
 * - A relay call handed from the desk to billing, which transfers it warm to a person who accepts.
 * - A Realtime call on the voice task whose model calls a webhook tool.
 * - A campaign dialing its contacts through Twilio: one answers (its stream on the voice task), one is
 *   busy; the campaign settles.
 */
import { startJsonEndpoint } from '../support/json-endpoint';
import type { StandInCall } from '../support/twilio-carrier';
import { mulawRecording } from '../support/twilio-media-client';
import { eventually, expectCleanStack, scheduleNamed, useStackTier } from './support';

const tier = useStackTier();
const api = (...args: Parameters<ReturnType<typeof tier>['api']>) => tier().api(...args);

let site: Awaited<ReturnType<typeof startJsonEndpoint>>;
beforeAll(async () => {
  site = await startJsonEndpoint({ in_stock: 3, sku: 'B-12' });
});
afterAll(() => site?.close());

afterEach(() => {
  expect(tier().realtime.errors).toEqual([]);
  expectCleanStack(tier().stack);
});

let spare = 0;
/** A number bought through the platform: Twilio's stand-in then holds it with the platform's voice URL and status callback. */
async function boughtNumber(agentId?: string): Promise<{ id: string; phone: string }> {
  const phone = tier().twilio.available[spare++]!;
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: phone, price: 1.15, ...(agentId ? { inbound_agent_id: agentId } : {}) } });
  expect([bought.status, bought.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
  return { id: bought.body.data.id, phone };
}

async function agent(body: Record<string, unknown>): Promise<string> {
  const created = await api('POST', '/api/v1/agents', { body });
  expect([created.status, created.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
  return created.body.data.id;
}

const callOf = async (id: string) => (await api('GET', `/api/v1/calls/${id}`)).body.data;
const callIdOf = (twiml: string) => /<Parameter name="call_id" value="([^"]*)"/.exec(twiml)![1]!;
const systemOf = (body: any): string => body.messages.find((m: any) => m.role === 'system')?.content ?? '';
const tone = (seconds: number, seed: number) => mulawRecording(seconds, seed);
/** The call's ConversationRelay session; when there is none, what the stand-in was told and refused. */
function relayOf(call: StandInCall) {
  if (!call.relay) throw new Error(`no ConversationRelay session: ${JSON.stringify({ documents: call.documents, refusals: call.refusals, failures: call.failures })}`);
  return call.relay;
}

it('relay call: the desk hands the caller to billing, billing transfers warm to a person who accepts; the call ends transferred', async () => {
  const { twilio, model, stack } = tier();
  const PERSON = '+14155550171';
  const billing = await agent({
    name: 'Billing', voice_pipeline: 'relay', agent_name: 'Bea', prompt: 'You are {{agent_name}}, billing.', ring_duration_ms: 20_000,
    selected_tools: [{ type: 'transfer_call', mode: 'warm', transfer_destinations: [{ phone_number: PERSON, description: 'Billing desk: refunds' }] }],
  });
  const desk = await agent({
    name: 'Desk', voice_pipeline: 'relay', agent_name: 'Ava', prompt: 'You are {{agent_name}}, front desk.', begin_message: 'Acme, {{agent_name}} speaking.',
    handoff_agents: [{ agent_id: billing, description: 'Billing questions' }],
  });
  const number = await boughtNumber(desk);

  model.reset();
  model.script(
    { toolCalls: [{ name: 'handoff_to_agent', arguments: { agent_id: billing, reason: 'invoice' } }] },
    (body) => ({ text: `${systemOf(body)} Which invoice?` }),
    { toolCalls: [{ name: 'transfer_call', arguments: { phone_number: PERSON, reason: 'refund' } }] },
    { text: 'Let me connect you with our billing desk.' },
    { text: 'Dana wants invoice 42 refunded.' },
  );
  const call = await twilio.incomingCall('+14155550100', number.phone);
  const callId = callIdOf(call.twiml);
  // ConversationRelay speaks the greeting itself (the TwiML's welcomeGreeting).
  expect(call.twiml).toContain('welcomeGreeting="Acme, Ava speaking."');
  if (!call.relay) {
    // Refused: the caller hangs up, so the session's action does not try again during the next tests.
    await twilio.hangUp(call.sid);
    await stack.queues.waitForIdle(20_000);
  }
  const relay = relayOf(call);
  relay.say('My invoice, please.');
  await relay.until(() => relay.replies().length === 1, 'billing answers');
  relay.say('Invoice 42 was charged twice, I want a refund from a person.');
  await relay.closed;
  expect(relay.replies()).toEqual(['You are Bea, billing. Which invoice?', 'Let me connect you with our billing desk.']);

  // The caller waits in the conference while the person is rung (a queued job placing a Twilio call).
  await eventually(async () => call.conference, (name) => !!name, 'the caller in the conference');
  const leg = (await eventually(async () => twilio.placedTo(PERSON).find((c) => c.from === number.phone), (c) => !!c, 'the person rung'))!;
  await twilio.answer(leg.sid, { digits: '1' });
  expect(leg.said).toEqual(['Dana wants invoice 42 refunded.', 'Press 1 to take this call, or any other key to decline.', 'Connecting you now.']);
  expect(twilio.conferences.get(call.conference!)!.status).toBe('in-progress');
  await twilio.hangUp(leg.sid);
  await stack.queues.waitForIdle(20_000);

  const ended = await eventually(() => callOf(callId), (c) => c?.status === 'ended', 'the call ended');
  expect(ended.disconnection_reason).toBe('transferred');
  expect(ended.segments.map((s: any) => [s.agent_id, s.reason])).toEqual([[desk, null], [billing, 'invoice']]);
  expect(ended.tool_calls.map((t: any) => t.name)).toEqual(['handoff_to_agent', 'transfer_call']);
  expect(ended.transfers).toEqual([expect.objectContaining({ phone_number: PERSON, mode: 'warm', outcome: 'connected' })]);
  // Twilio's REST calls were made with the credentials the operator put in the secret.
  expect(twilio.calls.size).toBeGreaterThanOrEqual(2);
}, 60_000);

it('Realtime call on the voice task: the model calls a webhook tool and answers with its result', async () => {
  const { twilio, realtime, realtimeScripts } = tier();
  const tool = (await api('POST', '/api/v1/tools', {
    body: { name: 'Stock', type: 'webhook', url: tier().secure(`${site.url}/stock`), definition: { name: 'stock_level', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } } },
  })).body.data;
  const seen: { output?: any } = {};
  realtimeScripts.set('stack-realtime', async (m) => {
    await m.next('session.update');
    await m.next('response.create');
    m.speak({ responseId: 'r0', itemId: 'i0', audio: tone(0.2, 1), transcript: 'Acme, how can I help?' });
    await m.until(() => m.inputAudio().length >= 800, 'caller audio');
    m.userSays('u1', 'How many B-12 do you have?');
    m.speak({ responseId: 'r1', itemId: 'i1', transcript: '', calls: [{ callId: 'c1', name: 'stock_level', args: { sku: 'B-12' } }] });
    seen.output = await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'c1', 20_000);
    await m.next('response.create');
    m.speak({ responseId: 'r2', itemId: 'i2', audio: tone(0.2, 3), transcript: `We have ${JSON.parse(seen.output.item.output).in_stock} of them.` });
    await m.closed;
  });
  const agentId = await agent({ name: 'Realtime desk', s2s_model: 'stack-realtime', voice_id: 'alloy', prompt: 'Answer stock questions.', begin_message: 'Acme, how can I help?', reminder_trigger_ms: 0, selected_tools: [{ tool_id: tool.id }] });
  const number = await boughtNumber(agentId);

  const call = await twilio.incomingCall('+14155550101', number.phone);
  const callId = callIdOf(call.twiml);
  const stream = call.stream!;
  expect(stream).toBeDefined();
  await stream.until(() => stream.media.length > 0, 'the greeting', 20_000);
  await stream.play(tone(0.2, 9));
  await eventually(async () => realtime.connections[0]?.received.filter((e) => e.type === 'response.create').length ?? 0, (n) => n >= 2, 'the reply after the tool');
  await stream.until(() => Buffer.concat(stream.media).length >= 2 * 1600, 'the reply played', 20_000);
  await twilio.hangUp(call.sid);

  expect(JSON.parse(seen.output.item.output)).toMatchObject({ in_stock: 3, sku: 'B-12' });
  expect(realtime.connections[0]!.request.headers.authorization).toBe('Bearer sk-stand-in-realtime');
  const request = site.requests.at(-1)!;
  expect(JSON.parse(request.body)).toMatchObject({ name: 'stock_level', arguments: { sku: 'B-12' }, conversation: { type: 'call', id: callId } });
  const ended = await eventually(() => callOf(callId), (c) => c?.status === 'ended', 'the call ended');
  expect(ended.tool_calls).toEqual([expect.objectContaining({ name: 'stock_level', result: { in_stock: 3, sku: 'B-12' } })]);
  expect(ended.transcript.map((t: any) => t.text)).toEqual(expect.arrayContaining(['Acme, how can I help?', 'How many B-12 do you have?', 'We have 3 of them.']));
}, 60_000);

it('campaign: dials its contacts through Twilio on the tick; one answers, one is busy; the campaign settles', async () => {
  const { twilio, stack, realtimeScripts } = tier();
  // On the Realtime pipeline: an outbound call's media stream reaches the voice task (the relay pipeline has its own test above).
  realtimeScripts.set('stack-campaign', async (m) => {
    await m.next('session.update');
    await m.next('response.create');
    m.speak({ responseId: 'r0', itemId: 'i0', audio: tone(0.2, 5), transcript: 'Hi, this is Acme with a reminder.' });
    await m.closed;
  });
  const agentId = await agent({ name: 'Reminder', s2s_model: 'stack-campaign', voice_id: 'alloy', begin_message: 'Hi, this is Acme with a reminder.', prompt: 'Remind the person of their visit.', reminder_trigger_ms: 0 });
  const number = await boughtNumber();
  const phones = ['+16465550181', '+16465550182'];
  const contacts: string[] = [];
  for (const [i, phone] of phones.entries()) contacts.push((await api('POST', '/api/v1/contacts', { body: { first_name: `P${i}`, phone } })).body.data.id);
  const schedule = { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: 2, retry_attempts: 0 };
  const created = await api('POST', '/api/v1/campaigns', { body: { name: 'Reminders', agent_id: agentId, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: contacts, schedule } });
  expect([created.status, created.text.slice(0, 300)]).toEqual([200, expect.any(String)]);
  const id = created.body.data.id;
  expect((await api('POST', `/api/v1/campaigns/${id}/start`)).status).toBe(200);

  await stack.scheduler.runNow(scheduleNamed(stack, 'CampaignTick'));
  await stack.queues.waitForIdle(20_000);
  const [answered, busy] = await Promise.all(phones.map((p) => eventually(async () => twilio.placedTo(p)[0], (c) => !!c, `the call to ${p}`)));
  const live = await twilio.answer(answered!.sid);
  const stream = live.stream!;
  expect(stream).toBeDefined();
  await stream.until(() => stream.media.length > 0, 'the greeting', 20_000);
  await twilio.hangUp(answered!.sid);
  await twilio.busy(busy!.sid);
  await stack.queues.waitForIdle(20_000);
  await stack.scheduler.runNow(scheduleNamed(stack, 'CampaignTick'));
  await stack.queues.waitForIdle(20_000);

  const campaign = await eventually(async () => (await api('GET', `/api/v1/campaigns/${id}`)).body.data, (c) => c.contact_stats.in_progress === 0 && c.contact_stats.pending === 0, 'every contact settled');
  expect(campaign.contact_stats).toMatchObject({ total: 2, contacted: 2, successful: 1 });
  expect(campaign.contact_stats.failed + campaign.contact_stats.no_answer).toBe(1);
  const calls = (await api('GET', `/api/v1/calls?campaign_id=${id}`)).body.data;
  expect(calls.map((c: any) => c.status)).toEqual(['ended', 'ended']);
}, 60_000);

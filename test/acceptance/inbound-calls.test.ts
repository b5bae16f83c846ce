/**
 * Black-box: inbound calls end (issue 25, point 1) and a stream token admits one stream (point 9),
 * on the local runtime over HTTP with its voice runtime, against a Twilio stand-in that behaves as
 * Twilio does (test/support/twilio-carrier.ts: a status callback only to a number whose
 * StatusCallback is set) and a scripted Realtime stand-in. Call lengths are real: the platform's
 * clock is shifted by hand while a call is live, and the carrier counts on the same clock.
 */
import { clockMs } from '../../shared/clock';
import { drawVersion } from '../../shared/domain/agents/traffic-split';
import { startVoiceServer, type VoiceServer } from '../../voice/server';
import type { ModelConnection } from '../support/realtime-stand-in';
import { startTwilioCarrier, type StandInCall, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { mulawRecording, TwilioMediaClient } from '../support/twilio-media-client';
import { until } from '../support/until';
import { useVoiceCallWiring } from '../support/voice-call-wiring';

let twilio: TwilioCarrierStandIn;

const SID = 'AC0000000000000000000000000000ab25';
const TOKEN = 'inbound-end-auth-token';

// The carrier starts before the platform, which reads its URL from its environment (the helper
// starts the Realtime stand-in the same way).
const carrierReady = (async () => {
  twilio = await startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() });
})();
beforeAll(() => carrierReady);

const { local, api, scripts, advanceClock, callOf, chargesOf, eventsOf } = useVoiceCallWiring(() => ({
  TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN,
}));
afterAll(() => twilio?.close());

const session = (m: ModelConnection) => m.next('session.update');
const tone = (seconds: number, seed: number) => mulawRecording(seconds, seed);
const parameters = (call: StandInCall) => Object.fromEntries([...call.twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [m[1]!, m[2]!]));

/** An agent answering the number, and the number bought through the API from the Twilio stand-in. */
async function answeringNumber(agent: Record<string, unknown>) {
  const created = await api('POST', '/api/v1/agents', { body: { name: 'Front desk', agent_name: 'Ava', reminder_trigger_ms: 0, ...agent } });
  expect(created.status).toBe(200);
  const [choice] = (await api('GET', '/api/v1/phone-numbers/available?area_code=415&limit=1')).body.data;
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price, inbound_agent_id: created.body.data.id } });
  expect(bought.status).toBe(200);
  const number = [...twilio.numbers.values()].find((n) => n.phone_number === choice.phone_number)!;
  return { agentId: created.body.data.id as string, id: bought.body.data.id as string, phone: choice.phone_number as string, number, pricePerMinute: choice.per_minute_price_inbound as number };
}

/** How a stream the runtime should refuse was closed (it is refused at once, or never). */
const closedWithin = (client: TwilioMediaClient, ms = 5000) =>
  Promise.race([client.closed, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the stream was admitted')), ms).unref())]);

const endedEventsOf = (id: string) => eventsOf('call.ended', id);

it('a number bought through Twilio gets the status callback as well as the voice URL; a rejected call\'s callback changes nothing', async () => {
  const { number, id, phone } = await answeringNumber({ s2s_model: 'unused', begin_message: 'Hello.' });
  const base = local().url;
  expect(number).toMatchObject({
    voice_url: `${base}/api/v1/telephony/twilio/inbound`, voice_method: 'POST',
    status_callback: `${base}/api/v1/telephony/twilio/status`, status_callback_method: 'POST',
  });
  // No agent: the call is rejected, and Twilio's `busy` callback for it finds no session.
  expect((await api('PATCH', `/api/v1/phone-numbers/${id}`, { body: { inbound_agent_id: null } })).status).toBe(200);
  const rejected = await twilio.incomingCall('+14155550176', phone);
  expect(rejected).toMatchObject({ status: 'busy', twiml: expect.stringContaining('<Reject/>') });
  expect(twilio.callbacks.filter((c) => c.params.CallSid === rejected.sid)).toEqual([expect.objectContaining({ status: 200, params: expect.objectContaining({ CallStatus: 'busy' }) })]);
  await local().platform.queue.waitForIdle();
  expect((await api('GET', '/api/v1/calls?limit=100')).body.data.filter((c: any) => c.to_phone_number === phone)).toEqual([]);
});

it('ends an inbound call `completed` when the caller hangs up and the carrier sends nothing, charged for its real length; its token admits no second stream', async () => {
  scripts.set('script-hang-up', async (m) => {
    await session(m);
    await m.next('response.create');
    m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.3, 1), transcript: 'Thanks for calling Acme.' });
  });
  const { phone, number, pricePerMinute } = await answeringNumber({ s2s_model: 'script-hang-up', begin_message: 'Thanks for calling Acme.' });
  // Like an operator's number that has only a Voice URL: Twilio will report nothing about its calls.
  number.status_callback = null;
  const call = await twilio.incomingCall('+14155550177', phone);
  const params = parameters(call);
  const callId = params.call_id!;
  await call.stream!.until(() => call.stream!.media.length > 0, 'the greeting');

  // The same token on another runtime task, while the call is live: refused.
  const other: VoiceServer = await startVoiceServer({ port: 0, host: '127.0.0.1' });
  try {
    const replay = await TwilioMediaClient.connect(other.url, { callSid: call.sid, customParameters: params });
    expect(await closedWithin(replay)).toMatchObject({ code: 1008, reason: expect.stringMatching(/token was already used/) });
    expect(other.sessions.size).toBe(0);
  } finally {
    await other.close();
  }
  expect(call.stream!.open).toBe(true);

  advanceClock(75_000); // the caller talks for 75 s
  const hungUpAt = Date.now();
  await twilio.hangUp(call.sid);
  const ended = await until(() => callOf(callId), (c) => c.status === 'ended', 'the call ending');
  expect(Date.now() - hungUpAt).toBeLessThan(10_000);
  expect(twilio.callbacks.filter((c) => c.params.CallSid === call.sid)).toEqual([]);
  expect(ended).toMatchObject({ direction: 'inbound', disconnection_reason: 'completed' });
  expect(ended.duration_sec).toBeGreaterThanOrEqual(75);
  expect(ended.duration_sec).toBeLessThanOrEqual(77);
  expect(ended.transcript.map((t: any) => t.text)).toEqual(['Thanks for calling Acme.']);
  // Two started minutes at the number's inbound price, once; `call.ended` once.
  const charges = await chargesOf(callId);
  expect(charges).toEqual([expect.objectContaining({ reason: 'call_minutes', amount_units: Math.round(2 * pricePerMinute * 10_000), phone_number: phone })]);
  expect(await endedEventsOf(callId)).toHaveLength(1);

  // Ever: the ended call's token is refused by the runtime that admitted it, too.
  const late = await TwilioMediaClient.connect(local().platform.voice!.url, { callSid: call.sid, customParameters: params });
  expect((await closedWithin(late)).code).toBe(1008);
});

it('ends a transferred inbound call at the transfer, then corrects its duration and charge to the carrier\'s, once', async () => {
  scripts.set('script-transfer', async (m) => {
    await session(m);
    await m.next('response.create');
    m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 2), transcript: 'Thanks for calling.' });
    await m.until(() => m.inputAudio().length >= 800, 'caller audio');
    m.userSays('u1', 'A person, please.');
    m.speak({ responseId: 'r2', itemId: 'i2', audio: tone(0.2, 3), transcript: 'Transferring you now.', calls: [{ callId: 'c1', name: 'transfer_call', args: { reason: 'asked for a person' } }] });
  });
  const { phone, number, pricePerMinute } = await answeringNumber({
    s2s_model: 'script-transfer', begin_message: 'Thanks for calling.', selected_tools: [{ type: 'transfer_call', phone_number: '+14155550199' }],
  });
  expect(number.status_callback).toBeTruthy();
  const call = await twilio.incomingCall('+14155550178', phone);
  const callId = parameters(call).call_id!;
  await call.stream!.until(() => call.stream!.media.length > 0, 'the greeting');
  advanceClock(30_000);
  await call.stream!.play(tone(0.1, 4));
  await call.stream!.closed; // the transfer's <Dial> left the stream
  expect(twilio.calls.get(call.sid)).toMatchObject({ status: 'in-progress', dialled: '+14155550199' });

  // The stream's end ended the call (the carrier reports only when the dialled leg ends).
  const atTransfer = await until(() => callOf(callId), (c) => c.status === 'ended', 'the call ending at the transfer');
  expect(atTransfer).toMatchObject({ disconnection_reason: 'transferred' });
  expect(atTransfer.duration_sec).toBeGreaterThanOrEqual(30);
  expect(atTransfer.duration_sec).toBeLessThanOrEqual(32);
  expect((await chargesOf(callId)).map((c: any) => c.amount_units)).toEqual([Math.round(pricePerMinute * 10_000)]);

  // The caller talks to the person for 150 s; then Twilio reports the whole call.
  advanceClock(150_000);
  await twilio.hangUp(call.sid);
  const [callback] = twilio.callbacks.filter((c) => c.params.CallSid === call.sid);
  expect(callback).toMatchObject({ url: `${local().url}/api/v1/telephony/twilio/status`, status: 200, params: { CallStatus: 'completed' } });
  const carrierSec = Number(callback!.params.CallDuration);
  expect(carrierSec).toBeGreaterThanOrEqual(180);
  const corrected = await until(() => callOf(callId), (c) => c.duration_sec === carrierSec, 'the carrier\'s duration');
  expect(corrected).toMatchObject({ status: 'ended', disconnection_reason: 'transferred', ended_at: atTransfer.ended_at });
  const minutes = Math.ceil(carrierSec / 60);
  expect((await chargesOf(callId)).map((c: any) => c.amount_units)).toEqual([Math.round(minutes * pricePerMinute * 10_000)]);

  // Twilio redelivers the callback: nothing changes, nothing is charged twice, no second `call.ended`.
  const again = await fetch(callback!.url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': (await import('../../shared/adapters/telephony/twilio-signature')).twilioSignature(TOKEN, callback!.url, callback!.params) },
    body: new URLSearchParams(callback!.params).toString(),
  });
  expect(again.status).toBe(200);
  await local().platform.queue.waitForIdle();
  expect(await callOf(callId)).toMatchObject({ duration_sec: carrierSec });
  expect(await chargesOf(callId)).toHaveLength(1);
  expect(await endedEventsOf(callId)).toHaveLength(1);
});

it('under the agent\'s traffic split, a caller meets one version on every call (keyed by their number), the split recorded on each', async () => {
  scripts.set('script-split', async (m) => {
    await session(m);
    await m.closed;
  });
  const { agentId, phone } = await answeringNumber({ s2s_model: 'script-split', begin_message: 'Draft.' });
  for (const v of [1, 2]) {
    expect((await api('PATCH', `/api/v1/agents/${agentId}`, { body: { begin_message: `Version ${v}.` } })).status).toBe(200);
    expect((await api('POST', `/api/v1/agents/${agentId}/versions`, { body: { description: `v${v}` } })).status).toBe(200);
  }
  const variants = [{ version: 1, weight: 50 }, { version: 2, weight: 50 }];
  const split = (await api('PATCH', `/api/v1/agents/${agentId}`, { body: { traffic_split: variants } })).body.data.traffic_split_id;
  for (const caller of ['+14155550181', '+14155550182', '+14155550183', '+14155550184']) {
    const versions: number[] = [];
    for (let k = 0; k < 2; k++) {
      const call = await twilio.incomingCall(caller, phone);
      const callId = parameters(call).call_id!;
      await twilio.hangUp(call.sid);
      const ended = await until(() => callOf(callId), (c) => c.status === 'ended', 'the call ended');
      expect(ended.traffic_split_id).toBe(split);
      versions.push(ended.agent_version);
    }
    expect(versions).toEqual([drawVersion(split, variants, `phone:${caller}`), drawVersion(split, variants, `phone:${caller}`)]);
  }
});

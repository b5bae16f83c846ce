/**
 * Where each reply's time goes on a Realtime call (docs/api.md, "Latency of every reply"; issue
 * 43): an inbound call from the Twilio stand-in through the voice runtime, the scripted Realtime
 * stand-in waiting known times before its first audio, a webhook tool that answers late. Every
 * figure is taken on the voice runtime's one clock; each bound below holds whatever the machine's
 * speed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { uniquePhone } from '../support/numbers';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { mulawRecording } from '../support/twilio-media-client';
import { until } from '../support/until';
import { useVoiceCallWiring } from '../support/voice-call-wiring';

const SID = 'AC0000000000000000000000000000f043';
const TOKEN = 'call-latency-token';
const MODEL_WAIT_MS = 150;
const TOOL_WAIT_MS = 200;
/**
 * The model's wait starts when the voice runtime reads `response.created`, not when the stand-in
 * sent it (operations.md: "the response's creation to its first audio", on the runtime's clock). On
 * a loaded machine that read can come a few ms after the send while the first audio is read at
 * once, so a figure can fall short of the stand-in's wait by that delivery gap (148 for 150 in one
 * CI run). The bounds below allow that gap and no more; the accuracy itself (within 2 ms p50) is
 * measured in docs/benchmarks.md, not here.
 */
const DELIVERY_SLACK_MS = 10;

let twilio: TwilioCarrierStandIn;
let tool: Server;
let toolUrl = '';
const ready = Promise.all([
  startTwilioCarrier({ accountSid: SID, authToken: TOKEN }).then((t) => (twilio = t)),
  new Promise<void>((resolve) => {
    tool = createServer((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ balance: '42.00' })), TOOL_WAIT_MS));
    });
    tool.listen(0, '127.0.0.1', () => {
      toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/balance`;
      resolve();
    });
  }),
]);
beforeAll(() => ready);
afterAll(async () => {
  await twilio?.close();
  await new Promise<void>((r) => tool.close(() => r()));
});

const { api, local, scripts, callOf } = useVoiceCallWiring(() => ({
  TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN, ALLOW_LOOPBACK_FETCH: 'true',
}));

const tone = (seconds: number, seed: number) => mulawRecording(seconds, seed);
/** At least `ms` on this clock: a timer set late in a busy loop turn can fire early by that turn's age. */
const wait = async (ms: number) => {
  const until = performance.now() + ms;
  while (performance.now() < until) await new Promise((r) => setTimeout(r, Math.max(1, Math.ceil(until - performance.now()))));
};
const sum = (l: any) => l.model + l.tools + l.knowledge_base + l.platform;

it('times each reply from the caller\'s end of speech to its first audio: the model\'s wait, the tool\'s, the rest; the call\'s latency once it ended', async () => {
  scripts.set('latency', async (m) => {
    await m.next('session.update');
    await m.next('response.create');
    m.speak({ responseId: 'r0', itemId: 'i0', audio: tone(0.2, 1), transcript: 'Hello, accounts here.' });
    await m.until(() => m.inputAudio().length >= 800, 'caller audio');
    // A reply straight away: the model's wait is its creation to its first audio.
    m.userSays('u1', 'Are you open today?');
    m.responseCreated('r1');
    await wait(MODEL_WAIT_MS);
    m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 2), transcript: 'Yes, until six.', created: false });
    // A reply after a tool: the first response only calls it (its whole time is the model's), then the tool answers late.
    await m.until(() => m.inputAudio().length >= 2 * 1600, 'the caller again');
    m.userSays('u2', 'What is my balance?');
    m.responseCreated('r2');
    await wait(MODEL_WAIT_MS);
    m.speak({ responseId: 'r2', itemId: 'i2', created: false, calls: [{ callId: 'c1', name: 'get_balance', args: {} }] });
    await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'c1');
    await m.next('response.create');
    m.speak({ responseId: 'r3', itemId: 'i3', audio: tone(0.2, 3), transcript: 'Your balance is 42 dollars.' });
    await m.closed;
  });
  const created = await api('POST', '/api/v1/tools', {
    body: { name: 'Balance', type: 'webhook', url: toolUrl, definition: { name: 'get_balance', description: 'The caller\'s balance', parameters: { type: 'object', properties: {} } } },
  });
  expect(created.status).toBe(200);
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Accounts', s2s_model: 'latency', voice_id: 'alloy', reminder_trigger_ms: 0, begin_message: 'Hello, accounts here.', selected_tools: [{ tool_id: created.body.data.id }] } });
  expect(agent.status).toBe(200);
  // A number no other file holds, imported, and Twilio told where its calls go.
  const phone = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', inbound_agent_id: agent.body.data.id } })).status).toBe(200);
  twilio.adopt(phone, { voiceUrl: `${local().platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${local().platform.url}/api/v1/telephony/twilio/status` });

  const call = await twilio.incomingCall(uniquePhone(), phone);
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const stream = call.stream!;
  await stream.until(() => stream.media.length > 0, 'the greeting');
  await stream.play(tone(0.2, 7));
  await stream.until(() => Buffer.concat(stream.media).length >= 2 * 1600, 'the first reply');
  await stream.play(tone(0.2, 8));
  await stream.until(() => Buffer.concat(stream.media).length >= 3 * 1600, 'the reply after the tool');
  expect((await callOf(callId)).latency).toBeNull(); // not before the end
  await twilio.hangUp(call.sid);

  const ended = await until(() => callOf(callId), (c) => c.status === 'ended' && c.transcript?.length >= 5, 'the call ended and its conversation written');
  const agentLines = ended.transcript.filter((t: any) => t.role === 'agent');
  expect(agentLines.map((t: any) => t.text)).toEqual(['Hello, accounts here.', 'Yes, until six.', 'Your balance is 42 dollars.']);
  const [greeting, first, afterTool] = agentLines;
  expect(greeting.latency_ms).toBeUndefined(); // a greeting answers nobody
  expect(ended.transcript.filter((t: any) => t.role === 'user').every((t: any) => t.latency_ms === undefined)).toBe(true);
  expect(first.latency_ms.model).toBeGreaterThanOrEqual(MODEL_WAIT_MS - DELIVERY_SLACK_MS);
  expect(first.latency_ms.tools).toBe(0);
  expect(sum(first.latency_ms)).toBe(first.latency_ms.e2e);
  expect(afterTool.latency_ms.model).toBeGreaterThanOrEqual(MODEL_WAIT_MS - DELIVERY_SLACK_MS);
  expect(afterTool.latency_ms.tools).toBeGreaterThanOrEqual(TOOL_WAIT_MS);
  expect(afterTool.latency_ms.e2e).toBeGreaterThanOrEqual(MODEL_WAIT_MS + TOOL_WAIT_MS - DELIVERY_SLACK_MS);
  expect(sum(afterTool.latency_ms)).toBe(afterTool.latency_ms.e2e);
  const e2es = [first.latency_ms.e2e, afterTool.latency_ms.e2e].sort((a, b) => a - b);
  expect(ended.latency.e2e).toEqual({ p50: e2es[0], p90: e2es[1], p99: e2es[1], min: e2es[0], max: e2es[1], num: 2 });
});

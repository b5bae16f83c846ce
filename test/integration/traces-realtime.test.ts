/**
 * Traces of a Realtime call on the voice runtime (docs/operations.md, "Traces"; issue 43): an
 * inbound call from the Twilio stand-in, the scripted Realtime stand-in, a webhook tool, exported
 * to an in-process OTLP receiver. The stream token carries the incoming request's trace to the
 * runtime: each model response is a GenAI `chat` span and the tool round an `execute_tool` under
 * `realtime tool calls`, all in the call's trace, and the tool's request carries it on.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { stopTracing } from '../../shared/telemetry/tracing';
import { uniquePhone } from '../support/numbers';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { mulawRecording } from '../support/twilio-media-client';
import { until } from '../support/until';
import { useVoiceCallWiring } from '../support/voice-call-wiring';

const SID = 'AC0000000000000000000000000000f0c3';
const TOKEN = 'traces-realtime-token';
const CLIENT = 3;

let twilio: TwilioCarrierStandIn;
let otlp: OtlpReceiver;
let tool: Server;
let toolUrl = '';
const toolRequests: IncomingHttpHeaders[] = [];
const ready = Promise.all([
  startTwilioCarrier({ accountSid: SID, authToken: TOKEN }).then((t) => (twilio = t)),
  startOtlpReceiver().then((o) => (otlp = o)),
  new Promise<void>((resolve) => {
    tool = createServer((req, res) => {
      toolRequests.push(req.headers);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ balance: '42.00' })));
    });
    tool.listen(0, '127.0.0.1', () => {
      toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/balance`;
      resolve();
    });
  }),
]);
beforeAll(() => ready);
afterAll(async () => {
  // Tracing's globals outlive this file in a jest process that runs the next file in band.
  await stopTracing();
  await twilio?.close();
  await otlp?.close();
  await new Promise<void>((r) => tool.close(() => r()));
});

const { api, local, scripts, callOf } = useVoiceCallWiring(() => ({
  TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN, ALLOW_LOOPBACK_FETCH: 'true',
  OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'vap-test', OTEL_BSP_SCHEDULE_DELAY: '20',
}));

const tone = (seconds: number, seed: number) => mulawRecording(seconds, seed);

it('a Realtime call\'s model responses and tool calls are in the call\'s trace, under the request that answered it', async () => {
  scripts.set('traced', async (m) => {
    await m.next('session.update');
    await m.next('response.create');
    m.speak({ responseId: 'r0', itemId: 'i0', audio: tone(0.2, 1), transcript: 'Hello, accounts here.' });
    await m.until(() => m.inputAudio().length >= 800, 'caller audio');
    m.userSays('u1', 'What is my balance?');
    m.speak({ responseId: 'r1', itemId: 'i1', calls: [{ callId: 'c1', name: 'get_balance', args: {} }] });
    await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'c1');
    await m.next('response.create');
    m.speak({ responseId: 'r2', itemId: 'i2', audio: tone(0.2, 3), transcript: 'Your balance is 42 dollars.' });
    await m.closed;
  });
  const created = await api('POST', '/api/v1/tools', {
    body: { name: 'Balance', type: 'webhook', url: toolUrl, definition: { name: 'get_balance', description: 'The caller\'s balance', parameters: { type: 'object', properties: {} } } },
  });
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Accounts', s2s_model: 'traced', voice_id: 'alloy', reminder_trigger_ms: 0, begin_message: 'Hello, accounts here.', selected_tools: [{ tool_id: created.body.data.id }] } });
  expect(agent.status).toBe(200);
  const phone = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', inbound_agent_id: agent.body.data.id } })).status).toBe(200);
  twilio.adopt(phone, { voiceUrl: `${local().platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${local().platform.url}/api/v1/telephony/twilio/status` });

  const call = await twilio.incomingCall(uniquePhone(), phone);
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const stream = call.stream!;
  await stream.until(() => stream.media.length > 0, 'the greeting');
  await stream.play(tone(0.2, 7));
  await stream.until(() => Buffer.concat(stream.media).length >= 2 * 1600, 'the reply after the tool');
  await twilio.hangUp(call.sid);
  const ended = await until(() => callOf(callId), (c) => c.status === 'ended' && c.transcript?.length >= 3, 'the call ended');
  const traceId: string = ended.trace_id;
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(String(toolRequests.at(-1)?.traceparent)).toMatch(new RegExp(`^00-${traceId}-`));

  await otlp.waitFor((s) => s.traceId === traceId && s.name === 'execute_tool get_balance');
  await otlp.waitFor((s) => s.traceId === traceId && s.name === 'chat traced' && s.attributes['gen_ai.response.finish_reasons'] !== undefined);
  await new Promise((r) => setTimeout(r, 300)); // the rest of the batch
  const spans = otlp.spans.filter((s) => s.traceId === traceId);
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  const ancestors = (s: ReceivedSpan): ReceivedSpan[] => {
    const chain: ReceivedSpan[] = [];
    for (let at = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) chain.push(at);
    return chain;
  };
  const inbound = spans.find((s) => s.name === 'POST /api/v1/telephony/twilio/inbound')!;
  expect(inbound).toBeDefined();
  // Each Realtime response: a GenAI client span under the request that answered the call.
  const responses = spans.filter((s) => s.name === 'chat traced');
  expect(responses.length).toBeGreaterThanOrEqual(3);
  for (const r of responses) {
    expect(r.kind).toBe(CLIENT);
    expect(r.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.provider.name': 'openai', 'gen_ai.request.model': 'traced' });
    expect(ancestors(r)).toContain(inbound);
  }
  const round = spans.find((s) => s.name === 'realtime tool calls')!;
  expect(ancestors(round)).toContain(inbound);
  const exec = spans.find((s) => s.name === 'execute_tool get_balance')!;
  expect(exec.parentSpanId).toBe(round.spanId);
  expect(otlp.rejected).toEqual([]);
}, 60_000);

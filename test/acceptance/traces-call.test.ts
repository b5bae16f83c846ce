/**
 * Black-box: one trace of a whole call (docs/operations.md, "Traces"; issue 43). An outbound call
 * of a relay agent through Twilio's stand-in, with a webhook tool and a webhook endpoint, exported
 * to an in-process OTLP receiver. The request that created the call, its dial (the call-place
 * job and the carrier request), Twilio's callbacks (their URLs carry the trace), the
 * ConversationRelay turns with their model requests and tool calls, the call's analysis and its
 * webhook deliveries: one trace, every span hanging from the request's server span.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clockMs } from '../../shared/clock';
import { stopTracing } from '../../shared/telemetry/tracing';
import { uniquePhone } from '../support/numbers';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { until } from '../support/until';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const SID = 'AC0000000000000000000000000000fe4c';
const TOKEN = 'traces-call-token';
const SERVER = 2;
const CLIENT = 3;
const CONSUMER = 5;

let twilio: TwilioCarrierStandIn;
let model: OpenAiStandIn;
let otlp: OtlpReceiver;
let hooks: WebhookReceiver;
let local: TestPlatform;
let tool: Server;
let toolUrl = '';
const toolRequests: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  twilio = await startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() });
  model = await startOpenAiStandIn();
  otlp = await startOtlpReceiver();
  hooks = await startWebhookReceiver();
  tool = createServer((req, res) => {
    toolRequests.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ units: 7 })));
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/stock`;
  local = await startTestPlatform({
    env: {
      TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN,
      LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model', ALLOW_LOOPBACK_FETCH: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'vap-test', OTEL_BSP_SCHEDULE_DELAY: '20',
    },
  });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  // Tracing's globals outlive this file in a jest process that runs the next file in band.
  await stopTracing();
  if (local) expectNoUnexpected5xx(local);
  await twilio?.close();
  await model?.close();
  await otlp?.close();
  await hooks?.close();
  await new Promise<void>((r) => tool.close(() => r()));
});

it('a call is one trace: its request, the dial, Twilio\'s callbacks, every relay turn with its model requests and tool, the analysis and the webhook deliveries', async () => {
  const api = local.api;
  await api('POST', '/api/v1/webhooks', { body: { url: `${hooks.url}/call-trace`, events: ['call.ended', 'call.analyzed'] } });
  const stock = await api('POST', '/api/v1/tools', {
    body: { name: 'Stock', type: 'webhook', url: toolUrl, definition: { name: 'stock_level', description: 'Units in stock', parameters: { type: 'object', properties: {} } } },
  });
  const agent = await api('POST', '/api/v1/agents', {
    body: { name: 'Relay desk', voice_pipeline: 'relay', voice_id: 'Google.en-GB-Neural2-A', begin_message: 'Acme, hello.', selected_tools: [{ tool_id: stock.body.data.id }, { type: 'end_call' }] },
  });
  expect(agent.status).toBe(200);
  const from = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone: from, type: 'pstn' } })).status).toBe(200);
  twilio.adopt(from, { voiceUrl: `${local.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${local.url}/api/v1/telephony/twilio/status` });
  const to = uniquePhone();
  const created = await api('POST', '/api/v1/calls', { body: { agent_id: agent.body.data.id, from_phone_number: from, to_phone_number: to } });
  expect(created.status).toBe(200);
  const callId: string = created.body.data.id;
  const traceId: string = created.body.data.trace_id;
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);

  await local.platform.queue.waitForIdle();
  const placed = [...twilio.calls.values()].find((c) => c.placed && c.to === to)!;
  // The callback URLs Twilio was given carry the call's trace (signed with the rest of the URL).
  expect(placed.placed!.statusCallback).toMatch(new RegExp(`[?&]traceparent=00-${traceId}-[0-9a-f]{16}-01`));
  model.script({ toolCalls: [{ name: 'stock_level' }] }, { text: 'We have 7 in stock.' }, { toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] }, { text: 'Goodbye!' });
  const answered = await twilio.answer(placed.sid);
  const relay = answered.relay!;
  relay.say('Is the kettle in stock?');
  await relay.until(() => relay.replies().length === 1, 'the stock answer');
  relay.say('That is all, bye.');
  await relay.closed;
  await local.platform.relay.idle();
  await local.platform.queue.waitForIdle(20_000);
  const ended = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && !!c.analysis, 'the call ended and analysed');
  expect(ended.trace_id).toBe(traceId);
  await hooks.waitFor(2, (r) => r.path === '/call-trace', 20_000);

  // The webhook tool's request carried the call's trace.
  expect(String(toolRequests.at(-1)?.traceparent)).toMatch(new RegExp(`^00-${traceId}-`));
  // Each delivery carries the trace and records it.
  for (const delivery of hooks.received.filter((r) => r.path === '/call-trace')) expect(String(delivery.headers.traceparent)).toMatch(new RegExp(`^00-${traceId}-`));

  await otlp.waitFor((s) => s.traceId === traceId && s.name === 'process webhook-delivery', 20_000);
  await otlp.waitFor((s) => s.traceId === traceId && s.name === 'process call-analysis');
  // The trace as exported so far: a parent span ends (and is exported) after its children, so read until none is missing (at most 10 s).
  const root = (await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER && s.name === 'POST /api/v1/calls'))!;
  // The harness's own requests to the platform (the test's fetch above the root, the Twilio stand-in's callbacks, made in this
  // process's context) are not the platform's spans.
  const harness = (s: ReceivedSpan) => s.kind === CLIENT && String(s.attributes['url.full'] ?? '').startsWith(local.url);
  let spans: ReceivedSpan[] = [];
  let byId = new Map<string, ReceivedSpan>();
  const ancestors = (s: ReceivedSpan): ReceivedSpan[] => {
    const chain: ReceivedSpan[] = [];
    for (let at = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) chain.push(at);
    return chain;
  };
  const orphans = () => {
    spans = otlp.spans.filter((s) => s.traceId === traceId);
    byId = new Map(spans.map((s) => [s.spanId, s]));
    return spans.filter((s) => s !== root && !harness(s) && !ancestors(s).includes(root)).map((s) => `${s.name} (parent ${s.parentSpanId ?? 'none'})`);
  };
  for (const end = Date.now() + 10_000; orphans().length && Date.now() < end; ) await new Promise((r) => setTimeout(r, 100));
  // No orphan: every span of the platform's hangs from the request's server span.
  expect(orphans()).toEqual([]);

  const one = (name: string | RegExp) => {
    const found = spans.filter((s) => (typeof name === 'string' ? s.name === name : name.test(s.name)));
    expect(found.length).toBeGreaterThan(0);
    return found;
  };
  // The dial: the call-place job, and its request to Twilio's Calls.json under it.
  const dial = one('process call-place')[0]!;
  expect(dial.kind).toBe(CONSUMER);
  expect(spans.some((s) => ancestors(s).includes(dial) && String(s.attributes['url.full'] ?? s.attributes['url.path'] ?? '').includes('/Calls.json'))).toBe(true);
  // Twilio's callbacks: the TwiML request and status callbacks, their server spans under the dial.
  const twiml = one('POST /api/v1/telephony/twilio/twiml')[0]!;
  expect(ancestors(twiml)).toContain(dial);
  const statuses = one('POST /api/v1/telephony/twilio/status');
  for (const s of statuses) expect(ancestors(s)).toContain(dial);
  one('POST /api/v1/telephony/twilio/relay-action');
  // The turns: under the TwiML request that started the session, each with its model requests and the tool.
  const turns = one('relay turn');
  expect(turns.length).toBeGreaterThanOrEqual(2);
  for (const t of turns) expect(ancestors(t)).toContain(twiml);
  const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
  expect(chats.length).toBeGreaterThanOrEqual(3);
  for (const c of chats) expect(turns.some((t) => ancestors(c).includes(t))).toBe(true);
  const exec = one('execute_tool stock_level')[0]!;
  expect(turns.some((t) => ancestors(exec).includes(t))).toBe(true);
  // The analysis and the deliveries, through the queues.
  expect(one('process call-analysis')[0]!.kind).toBe(CONSUMER);
  expect(one('process webhook-delivery').length).toBeGreaterThanOrEqual(2);
  const deliveries = (await api('GET', `/api/v1/webhooks/${(await api('GET', '/api/v1/webhooks')).body.data[0].id}/deliveries`)).body.data;
  expect(deliveries.length).toBeGreaterThanOrEqual(2);
  for (const d of deliveries) expect(d.trace_id).toBe(traceId);
  // Phone numbers never reach a span (the callback URLs' query is not recorded).
  for (const s of spans) for (const value of [s.name, ...Object.values(s.attributes)].flat()) if (typeof value === 'string') expect(value).not.toMatch(/(\+|%2B)\d{7,15}/);
  expect(otlp.rejected).toEqual([]);
}, 60_000);

it('an incoming call is one trace too: the number\'s status callback, which carries none, continues the answering request\'s trace (and links its own)', async () => {
  const api = local.api;
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Inbound desk', voice_pipeline: 'relay', voice_id: 'Google.en-GB-Neural2-A', begin_message: 'Acme, hello.' } });
  expect(agent.status).toBe(200);
  const phone = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', inbound_agent_id: agent.body.data.id } })).status).toBe(200);
  // Twilio's number: its voice URL and its one fixed StatusCallback (no query of ours: no trace context).
  twilio.adopt(phone, { voiceUrl: `${local.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${local.url}/api/v1/telephony/twilio/status` });
  model.script({ text: 'It opens at nine.' });
  const incoming = await twilio.incomingCall(uniquePhone(), phone);
  const callId = /<Parameter name="call_id" value="([^"]*)"/.exec(incoming.twiml)![1]!;
  const relay = incoming.relay!;
  relay.say('When do you open?');
  await relay.until(() => relay.replies().length === 1, 'the answer');
  relay.close(); // the caller hangs up: the number's status callback hears `completed` first
  await relay.closed;
  await local.platform.relay.idle();
  await local.platform.queue.waitForIdle(20_000);
  const ended = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && !!c.analysis, 'the call ended and analysed');
  const traceId: string = ended.trace_id;
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(twilio.callbacks.some((c) => c.url === `${local.url}/api/v1/telephony/twilio/status` && c.params.CallSid === incoming.sid && c.params.CallStatus === 'completed')).toBe(true);

  const harnessParent = (s: ReceivedSpan) => otlp.spans.some((p) => p.spanId === s.parentSpanId && p.kind === CLIENT && String(p.attributes['url.full'] ?? '').startsWith(local.url));
  const root = await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER && s.name === 'POST /api/v1/telephony/twilio/inbound');
  // (Its parent, if any, is the harness's: the stand-in's request from this process, traced by the platform's instrumentation.)
  if (root.parentSpanId) expect(harnessParent(root)).toBe(true);
  const status = await otlp.waitFor((s) => s.traceId === traceId && s.name === 'call status', 20_000);
  await otlp.waitFor((s) => s.traceId === traceId && s.name === 'process call-analysis', 20_000);
  // The status's work joins the call's trace, linked to the job that took it from the callback's queue message …
  expect(status.attributes['call.status']).toBe('completed');
  expect(status.links).toHaveLength(1);
  const link = status.links[0]!;
  const consumer = await otlp.waitFor((s) => s.spanId === link.spanId);
  expect(consumer).toMatchObject({ traceId: link.traceId, name: 'process call-events', kind: CONSUMER });
  // … whose trace is the status callback's own request (nothing tells Twilio to carry ours): not the call's.
  expect(link.traceId).not.toBe(traceId);
  const callback = await otlp.waitFor((s) => s.traceId === link.traceId && s.kind === SERVER && s.name === 'POST /api/v1/telephony/twilio/status');
  const inLinked = new Map(otlp.spans.filter((s) => s.traceId === link.traceId).map((s) => [s.spanId, s]));
  let up = consumer.parentSpanId ? inLinked.get(consumer.parentSpanId) : undefined;
  while (up && up !== callback) up = up.parentSpanId ? inLinked.get(up.parentSpanId) : undefined;
  expect(up).toBe(callback);
  let byId = new Map<string, ReceivedSpan>();
  const ancestors = (s: ReceivedSpan): ReceivedSpan[] => {
    const chain: ReceivedSpan[] = [];
    for (let at = s.parentSpanId ? byId.get(s.parentSpanId) : undefined; at; at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined) chain.push(at);
    return chain;
  };
  const harness = (s: ReceivedSpan) => s.kind === CLIENT && String(s.attributes['url.full'] ?? '').startsWith(local.url);
  const orphans = () => {
    const spans = otlp.spans.filter((s) => s.traceId === traceId);
    byId = new Map(spans.map((s) => [s.spanId, s]));
    return spans.filter((s) => s !== root && !harness(s) && !ancestors(s).includes(root)).map((s) => `${s.name} (parent ${s.parentSpanId ?? 'none'})`);
  };
  for (const end = Date.now() + 10_000; orphans().length && Date.now() < end; ) await new Promise((r) => setTimeout(r, 100));
  expect(orphans()).toEqual([]);
  expect(ancestors(status)).toContain(root);
  // The analysis hangs from what ended the call: the status, or the session's `<Connect action>` (its URL carries the
  // trace), whichever the platform applied first (Twilio sends both as the caller hangs up).
  const analysis = otlp.spans.find((s) => s.traceId === traceId && s.name === 'process call-analysis')!;
  const action = otlp.spans.find((s) => s.traceId === traceId && s.kind === SERVER && s.name === 'POST /api/v1/telephony/twilio/relay-action');
  expect(ancestors(analysis).some((s) => s === status || s === action)).toBe(true);
  expect(otlp.spans.filter((s) => s.traceId === traceId && s.name === 'relay turn').length).toBeGreaterThanOrEqual(1);
  expect(otlp.rejected).toEqual([]);
}, 60_000);

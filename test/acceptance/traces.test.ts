/**
 * Black-box: traces (docs/api.md, "Traces"; issue 43). The platform exports OTLP/HTTP JSON to an
 * in-process receiver; a chat turn through the real OpenAI-compatible adapter (the Chat
 * Completions stand-in) with a webhook tool is one trace: the HTTP server span, the turn, a
 * GenAI `chat` client span per model request, an `execute_tool` span, DynamoDB spans, and the
 * tool's request carries that trace's `traceparent`. The trace crosses the queues to a webhook
 * delivery. Phone numbers never reach an attribute; message content only with the capture setting.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { stopTracing } from '../../shared/telemetry/tracing';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';

const PHONE = '+14155550123';
const SERVER = 2;
const CLIENT = 3;

let model: OpenAiStandIn;
let otlp: OtlpReceiver;
let hooks: WebhookReceiver;
let local: TestPlatform;
let tool: Server;
let toolUrl = '';
const toolRequests: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  model = await startOpenAiStandIn();
  otlp = await startOtlpReceiver();
  hooks = await startWebhookReceiver();
  tool = createServer((req, res) => {
    toolRequests.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ open: '10 am', callback: PHONE })));
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/hours`;
  local = await startTestPlatform({
    env: {
      LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-test-standin', ALLOW_LOOPBACK_FETCH: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SERVICE_NAME: 'vap-test', OTEL_BSP_SCHEDULE_DELAY: '20',
    },
  });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  // Tracing's globals outlive this file in a jest process that runs the next file in band.
  await stopTracing();
  if (local) expectNoUnexpected5xx(local);
  await model?.close();
  await otlp?.close();
  await hooks?.close();
  await new Promise<void>((r) => tool.close(() => r()));
});

const traceOf = (header: string | string[] | undefined) => /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(String(header))?.slice(1);
const inTrace = (traceId: string) => otlp.spans.filter((s) => s.traceId === traceId);
const allStrings = (s: ReceivedSpan) => [s.name, ...Object.values(s.attributes).flatMap((v) => (Array.isArray(v) ? v : [v])).filter((v): v is string => typeof v === 'string')];

async function chatWithTool() {
  const created = await local.api('POST', '/api/v1/tools', {
    body: { name: 'Hours', type: 'webhook', url: toolUrl, definition: { name: 'get_hours', description: 'Opening hours', parameters: { type: 'object', properties: {} } } },
  });
  const agent = await local.api('POST', '/api/v1/agents', { body: { name: 'Desk', begin_message: 'Hello!', selected_tools: [{ tool_id: created.body.data.id }] } });
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id, dynamic_variables: { callback: PHONE } } })).body.data;
  return chat;
}

it('a chat turn with a webhook tool is one trace: server span, turn, GenAI chat spans with usage, execute_tool, DynamoDB, and the tool request carries its traceparent', async () => {
  const chat = await chatWithTool();
  expect(chat.trace_id).toMatch(/^[0-9a-f]{32}$/);
  // The chat records the trace it was started in: that request's server span.
  await otlp.waitFor((s) => s.traceId === chat.trace_id && s.kind === SERVER && s.name === 'POST /api/v1/chats');

  model.script({ toolCalls: [{ name: 'get_hours' }], usage: { prompt_tokens: 120, completion_tokens: 9 } }, { text: 'We open at 10 am.', usage: { prompt_tokens: 150, completion_tokens: 7 } });
  const before = toolRequests.length;
  const turn = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: `When do you open? Call me on ${PHONE}` } });
  expect(turn.status).toBe(200);
  expect(toolRequests.length).toBe(before + 1);
  const [traceId, toolParent] = traceOf(toolRequests[before]!.traceparent)!;
  expect(traceId).toMatch(/^[0-9a-f]{32}$/);

  const server = await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER);
  expect(server.name).toBe('POST /api/v1/chats/{id}/messages');
  // Its parent, if any, is the test's own fetch: the fetch instrumentation sees every fetch of this process, the test's too.
  if (server.parentSpanId) expect(otlp.spans.find((s) => s.spanId === server.parentSpanId)).toMatchObject({ kind: CLIENT, traceId });
  expect(server.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/api/v1/chats/{id}/messages', 'http.response.status_code': 200 });
  expect(server.resource['service.name']).toBe('vap-test');
  await otlp.waitFor((s) => s.traceId === traceId && s.name === 'execute_tool get_hours');
  await new Promise((r) => setTimeout(r, 200)); // the rest of the batch
  const spans = inTrace(traceId);
  const byId = new Map(spans.map((s) => [s.spanId, s]));
  // Every span of the trace hangs from the server span.
  for (const s of spans) {
    let at: ReceivedSpan | undefined = s;
    while (at && at !== server && at.parentSpanId) at = byId.get(at.parentSpanId);
    if (s.kind !== CLIENT || s.spanId !== server.parentSpanId) expect(at).toBe(server);
  }

  const turnSpan = spans.find((s) => s.attributes['gen_ai.operation.name'] === 'invoke_agent');
  expect(turnSpan?.attributes['gen_ai.conversation.id']).toBe(chat.id);

  const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
  expect(chats).toHaveLength(2);
  expect(chats[0]).toMatchObject({ kind: CLIENT, parentSpanId: turnSpan!.spanId });
  expect(chats[0]!.name).toMatch(/^chat /);
  expect(chats[0]!.attributes).toMatchObject({ 'gen_ai.provider.name': 'openai', 'gen_ai.usage.input_tokens': 120, 'gen_ai.usage.output_tokens': 9, 'gen_ai.response.finish_reasons': ['tool_calls'] });
  expect(chats[0]!.attributes['gen_ai.request.model']).toEqual(expect.any(String));
  expect(chats[1]!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 150, 'gen_ai.usage.output_tokens': 7, 'gen_ai.response.finish_reasons': ['stop'] });
  // The model request itself, its HTTP client span (shared/adapters/llm/http-post.ts), under the chat span.
  expect(spans.some((s) => s.kind === CLIENT && s.parentSpanId === chats[0]!.spanId && s.attributes['http.request.method'] === 'POST')).toBe(true);

  const exec = spans.find((s) => s.name === 'execute_tool get_hours')!;
  expect(exec.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'get_hours' });
  expect(exec.attributes['gen_ai.tool.call.id']).toEqual(expect.any(String));
  // The tool's request: a client span under execute_tool, whose id is the traceparent's parent.
  const toolClient = byId.get(toolParent!)!;
  expect(toolClient).toMatchObject({ kind: CLIENT, parentSpanId: exec.spanId });

  const dynamo = spans.filter((s) => s.attributes['rpc.service'] === 'DynamoDB');
  expect(dynamo.length).toBeGreaterThan(0);
  expect(dynamo[0]).toMatchObject({ kind: CLIENT, attributes: { 'rpc.system': 'aws-api', 'db.system.name': 'aws.dynamodb' } });
  expect(dynamo.map((s) => s.name)).toEqual(expect.arrayContaining([expect.stringMatching(/^DynamoDB\.(GetItem|Query|TransactWriteItems|PutItem|UpdateItem)$/)]));

  // Content is off by default: neither the message nor the reply is in any span.
  for (const s of spans) {
    expect(s.attributes['gen_ai.input.messages']).toBeUndefined();
    expect(s.attributes['gen_ai.output.messages']).toBeUndefined();
    expect(allStrings(s).join('\n')).not.toContain('When do you open');
  }
});

it('message content only with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, and never a phone number', async () => {
  const chat = await chatWithTool();
  process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'true';
  try {
    model.script({ toolCalls: [{ name: 'get_hours', arguments: { note: `ring ${PHONE}` } }] }, { text: `We open at 10 am; we will ring ${PHONE}.` });
    const before = toolRequests.length;
    expect((await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: `When do you open? Call me on ${PHONE}` } })).status).toBe(200);
    const [traceId] = traceOf(toolRequests[before]!.traceparent)!;
    await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER);
    await new Promise((r) => setTimeout(r, 200));
    const spans = inTrace(traceId);
    const chatSpan = spans.find((s) => s.attributes['gen_ai.operation.name'] === 'chat')!;
    expect(String(chatSpan.attributes['gen_ai.input.messages'])).toContain('When do you open?');
    expect(String(spans.find((s) => s.name === 'execute_tool get_hours')!.attributes['gen_ai.tool.call.result'])).toContain('10 am');
  } finally {
    delete process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
  }
  // Phone numbers never: not in this trace's message content, not in any span exported so far.
  for (const s of otlp.spans) for (const text of allStrings(s)) expect(text).not.toMatch(/(\+|%2B)\d{7,15}/);
});

it('the trace crosses the queues: a webhook delivery carries the traceparent of the request that caused it, and records its trace_id', async () => {
  const endpoint = (await local.api('POST', '/api/v1/webhooks', { body: { url: `${hooks.url}/traces`, events: ['chat.ended'] } })).body.data;
  const chat = await chatWithTool();
  const ended = await local.api('POST', `/api/v1/chats/${chat.id}/end`);
  expect(ended.status).toBe(200);
  const [delivery] = await hooks.waitFor(1, (r) => r.path === '/traces', 20_000);
  const [traceId] = traceOf(delivery!.headers.traceparent)!;
  // The same trace as the request that ended the chat (its server span), through the event queues.
  const server = await otlp.waitFor((s) => s.traceId === traceId && s.kind === SERVER);
  expect(server.name).toBe('POST /api/v1/chats/{id}/end');
  await otlp.waitFor((s) => s.traceId === traceId && s.kind === 5 && s.name.startsWith('process '));
  await local.platform.queue.waitForIdle(20_000);
  const deliveries = (await local.api('GET', `/api/v1/webhooks/${endpoint.id}/deliveries`)).body.data;
  expect(deliveries[0].trace_id).toBe(traceId);
  expect(otlp.rejected).toEqual([]);
});

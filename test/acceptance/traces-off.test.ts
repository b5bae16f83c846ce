/**
 * Black-box: tracing off (no OTEL_* setting) exports nothing, sends no `traceparent` and records
 * `trace_id: null` (docs/api.md, "Traces"). A file of its own: the OpenTelemetry API's globals
 * live per process, and tests/acceptance/traces.test.ts turns them on.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { startOtlpReceiver, type OtlpReceiver } from '../support/otlp-receiver';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';

let model: OpenAiStandIn;
let otlp: OtlpReceiver;
let local: TestPlatform;
let tool: Server;
let toolUrl = '';
const toolRequests: IncomingHttpHeaders[] = [];

beforeAll(async () => {
  model = await startOpenAiStandIn();
  otlp = await startOtlpReceiver();
  tool = createServer((req, res) => {
    toolRequests.push(req.headers);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"open":"10 am"}'));
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/hours`;
  // OTEL_TRACES_EXPORTER=none wins over an endpoint, as the specification says.
  local = await startTestPlatform({ env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-test-standin', ALLOW_LOOPBACK_FETCH: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_TRACES_EXPORTER: 'none' } });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  if (local) expectNoUnexpected5xx(local);
  await model?.close();
  await otlp?.close();
  await new Promise<void>((r) => tool.close(() => r()));
});

it('off: no span exported, no traceparent on the tool request, trace_id null', async () => {
  const created = await local.api('POST', '/api/v1/tools', {
    body: { name: 'Hours', type: 'webhook', url: toolUrl, definition: { name: 'get_hours', description: 'Opening hours', parameters: { type: 'object', properties: {} } } },
  });
  const agent = await local.api('POST', '/api/v1/agents', { body: { name: 'Desk', begin_message: 'Hello!', selected_tools: [{ tool_id: created.body.data.id }] } });
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } })).body.data;
  expect(chat.trace_id).toBeNull();
  model.script({ toolCalls: [{ name: 'get_hours' }] }, { text: 'We open at 10 am.' });
  expect((await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'When do you open?' } })).status).toBe(200);
  expect(toolRequests).toHaveLength(1);
  expect(toolRequests[0]!.traceparent).toBeUndefined();
  expect(model.requests.every((r: { headers: IncomingHttpHeaders }) => r.headers.traceparent === undefined)).toBe(true);
  expect((await local.api('GET', `/api/v1/chats/${chat.id}`)).body.data.trace_id).toBeNull();
  await new Promise((r) => setTimeout(r, 300));
  expect(otlp.spans).toEqual([]);
  expect(otlp.rejected).toEqual([]);
});

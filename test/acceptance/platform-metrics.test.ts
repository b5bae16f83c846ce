/**
 * Black-box: the metrics the platform team watches (docs/operations.md, "Metrics"; issue 43), as
 * the EMF lines the functions write, read from the local runtime's `metrics` sink. Through the real
 * HTTP API: a chat turn whose webhook tool fails (nothing listens at its URL), a turn whose model
 * answers 500, and the queued work every request leaves (the API key's last use).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { METRICS_NAMESPACE } from '../../shared/telemetry/metrics';
import { startChatModelSetup, type ChatModelSetup } from '../support/chat-model-setup';
import type { OpenAiStandIn } from '../support/openai-stand-in';
import type { TestPlatform } from '../support/platform';
import { until } from '../support/until';

const MODEL_WAIT_MS = 40;

let setup: ChatModelSetup | undefined;
let model: OpenAiStandIn;
let local: TestPlatform;
/** A webhook tool's URL where nothing listens: the model hears an error, the platform counts a tool error. */
let deadUrl = '';
const lines: string[] = [];

beforeAll(async () => {
  const closed: Server = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  deadUrl = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/hours`;
  await new Promise<void>((r) => closed.close(() => r()));
  ({ model, local } = setup = await startChatModelSetup({ metrics: (line) => lines.push(line) }));
}, 60_000);
afterAll(() => setup?.stop());

const docs = () => lines.map((l) => JSON.parse(l) as Record<string, any>);
/** Every value of `metric` written under `dimension` = `value` (Powertools writes one value, or an array of them). */
const valuesOf = (metric: string, dimension: string, value: string): number[] => docs().filter((d) => d[dimension] === value && metric in d).flatMap((d) => d[metric]);
const total = (values: number[]) => values.reduce((a, b) => a + b, 0);

it('writes the replies with their end-to-end time, the model\'s errors by kind, the tool\'s errors and the queue waits, with no organization in them', async () => {
  const created = await local.api('POST', '/api/v1/tools', {
    body: { name: 'Hours', type: 'webhook', url: deadUrl, definition: { name: 'get_hours', description: 'Opening hours', parameters: { type: 'object', properties: {} } } },
  });
  expect(created.status).toBe(200);
  const agent = (await local.api('POST', '/api/v1/agents', { body: { name: 'Desk', begin_message: 'Hello!', selected_tools: [{ tool_id: created.body.data.id }] } })).body.data;
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.id } })).body.data;
  const organizationId = local.platform.keys[0]!.organizationId;
  // The greeting is no reply to anything: not counted.
  expect(valuesOf('Replies', 'Channel', 'chat')).toEqual([]);

  // A turn: the tool fails, the model replies. Written as the request ends, before the answer comes back.
  model.script({ toolCalls: [{ name: 'get_hours' }] }, { text: 'Sorry, I cannot see the hours right now.', delayMs: MODEL_WAIT_MS });
  const turn = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'When do you open?' } });
  expect(turn.status).toBe(200);
  const reply = turn.body.data.messages.find((m: any) => m.role === 'agent');
  expect(reply.latency_ms.e2e).toBeGreaterThanOrEqual(MODEL_WAIT_MS);
  expect(total(valuesOf('Replies', 'Channel', 'chat'))).toBe(1);
  expect(valuesOf('ReplyLatency', 'Channel', 'chat')).toEqual([reply.latency_ms.e2e]);
  expect(total(valuesOf('ToolErrors', 'ToolType', 'webhook'))).toBe(1);
  expect(valuesOf('ModelErrors', 'Kind', 'provider_error')).toEqual([]);

  // The model fails: counted by its kind; no reply.
  local.expectFailures(/answered 503/);
  model.script({ status: 500, message: 'the model is down' });
  const failed = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'Hello?' } });
  expect(failed.status).toBe(503);
  expect(total(valuesOf('ModelErrors', 'Kind', 'provider_error'))).toBe(1);
  expect(total(valuesOf('Replies', 'Channel', 'chat'))).toBe(1);

  // Every authenticated request queues its key's last use: the job's batch writes how long each message waited.
  const waits = await until(async () => valuesOf('QueueWait', 'Queue', 'api-key-usage'), (v) => v.length > 0, 'a queue wait of api-key-usage');
  for (const wait of waits) expect(wait).toBeGreaterThanOrEqual(0);

  for (const doc of docs()) {
    const [directive] = doc._aws.CloudWatchMetrics;
    expect(directive.Namespace).toBe(METRICS_NAMESPACE);
    expect(directive.Dimensions).toHaveLength(1);
    expect(directive.Dimensions[0]).toHaveLength(2);
  }
  const written = lines.join('\n');
  for (const id of [organizationId, agent.id, chat.id]) expect(written).not.toContain(id);
});

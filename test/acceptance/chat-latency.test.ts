/**
 * Black-box: where each chat reply's time goes (docs/api.md, "Latency of every reply"; issue 43),
 * through the real OpenAI-compatible adapter against the Chat Completions stand-in and a slow
 * webhook tool. Each bound below holds whatever the machine's speed: the stand-in and the tool wait
 * known times, and every figure is taken on the platform's one clock.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { readSse } from '../support/sse';
import { expectNoUnexpected5xx, startTestPlatform, type TestPlatform } from '../support/platform';

const OTHER_KEY = generateApiKey();
const MODEL_WAIT_MS = 150;
const TOOL_WAIT_MS = 200;
const HOLD_MS = 400;

let model: OpenAiStandIn;
let local: TestPlatform;
let tool: Server;
let toolUrl = '';

beforeAll(async () => {
  model = await startOpenAiStandIn();
  tool = createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ open: '10 am' }));
    }, TOOL_WAIT_MS));
  });
  await new Promise<void>((r) => tool.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(tool.address() as AddressInfo).port}/hours`;
  local = await startTestPlatform({ apiKeys: [generateApiKey(), OTHER_KEY], env: { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-test-standin', ALLOW_LOOPBACK_FETCH: 'true' } });
}, 60_000);
afterAll(async () => {
  await local?.stop();
  if (local) expectNoUnexpected5xx(local);
  await model?.close();
  await new Promise<void>((r) => tool.close(() => r()));
});

const sum = (l: any) => l.model + l.tools + l.knowledge_base + l.platform;

it('times every reply: the model\'s wait, the tools\', the rest as platform; the chat\'s latency written at its end', async () => {
  const created = await local.api('POST', '/api/v1/tools', {
    body: { name: 'Hours', type: 'webhook', url: toolUrl, definition: { name: 'get_hours', description: 'Opening hours', parameters: { type: 'object', properties: {} } } },
  });
  expect(created.status).toBe(200);
  const agent = await local.api('POST', '/api/v1/agents', { body: { name: 'Desk', begin_message: 'Hello!', selected_tools: [{ tool_id: created.body.data.id }] } });
  const chat = (await local.api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } })).body.data;
  // The greeting is no reply to anything: it has no figures.
  expect(chat.messages[0]).toMatchObject({ role: 'agent', latency_ms: null });

  // A reply after a tool: the model's two waits (the whole first request, the second to its first token), the tool's.
  model.script({ toolCalls: [{ name: 'get_hours' }], delayMs: MODEL_WAIT_MS }, { text: 'We open at 10 am.', delayMs: MODEL_WAIT_MS });
  const turn = await local.api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'When do you open?' } });
  expect(turn.status).toBe(200);
  const [user, call, result, reply] = turn.body.data.messages;
  expect([user.latency_ms, call.latency_ms, result.latency_ms]).toEqual([null, null, null]);
  const l = reply.latency_ms;
  expect(Object.keys(l).sort()).toEqual(['e2e', 'knowledge_base', 'model', 'platform', 'tools']);
  expect(l.model).toBeGreaterThanOrEqual(2 * MODEL_WAIT_MS);
  expect(l.tools).toBeGreaterThanOrEqual(TOOL_WAIT_MS);
  expect(l.knowledge_base).toBe(0);
  expect(l.platform).toBeGreaterThanOrEqual(0);
  expect(sum(l)).toBe(l.e2e);

  // Streamed: e2e ends at the first delta, not at the reply's end (the rest is held back HOLD_MS).
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  model.script({ text: 'Yes, every Saturday too.', pieces: ['Yes, ', 'every Saturday too.'], holdUntil: held });
  const startedMs = Date.now();
  const response = await fetch(`${local.url}/api/v1/chats/${chat.id}/messages`, {
    method: 'POST', headers: { 'x-api-key': local.key, 'content-type': 'application/json', accept: 'text/event-stream' }, body: JSON.stringify({ content: 'Saturdays too?' }),
  });
  let completed: any;
  for await (const e of readSse(response)) {
    if (e.event === 'message.delta') setTimeout(release, HOLD_MS);
    if (e.event === 'turn.completed') completed = e.data;
  }
  const totalMs = Date.now() - startedMs;
  const streamed = completed.messages.find((m: any) => m.role === 'agent').latency_ms;
  expect(streamed.e2e).toBeLessThanOrEqual(totalMs - HOLD_MS);
  expect(streamed.tools).toBe(0);
  expect(sum(streamed)).toBe(streamed.e2e);

  // Before the end the chat has no summary; at its end, each member over the two replies.
  expect((await local.api('GET', `/api/v1/chats/${chat.id}`)).body.data.latency).toBeNull();
  const ended = await local.api('POST', `/api/v1/chats/${chat.id}/end`, { body: {} });
  expect(ended.status).toBe(200);
  const read = (await local.api('GET', `/api/v1/chats/${chat.id}`)).body.data;
  const stored = read.messages.filter((m: any) => m.latency_ms).map((m: any) => m.latency_ms);
  expect(stored).toEqual([l, streamed]);
  const e2es = [l.e2e, streamed.e2e].sort((a, b) => a - b);
  expect(read.latency.e2e).toEqual({ p50: e2es[0], p90: e2es[1], p99: e2es[1], min: e2es[0], max: e2es[1], num: 2 });
  expect(read.latency.tools).toMatchObject({ min: 0, max: l.tools, num: 2 });
  const listed = (await local.api('GET', `/api/v1/chats?agent_id=${agent.body.data.id}`)).body.data;
  expect(listed.find((c: any) => c.id === chat.id).latency).toEqual(read.latency);

  // Analytics: percentiles from the counters' log-scale buckets, within ±9.1% of the exact figures, in total and per version (the draft).
  const today = new Date().toISOString().slice(0, 10);
  const stats = async () => (await local.api('GET', `/api/v1/analytics/conversations?from=${today}&to=${today}&agent_id=${agent.body.data.id}`)).body.data;
  let totals: any;
  for (let i = 0; i < 100 && !(totals = (await stats()).totals).latency.e2e; i++) await new Promise((r) => setTimeout(r, 100));
  const near = (estimate: number, exact: number) => expect(Math.abs(estimate - exact)).toBeLessThanOrEqual(Math.ceil(exact * 0.0915) + 1);
  near(totals.latency.e2e.p50, read.latency.e2e.p50);
  near(totals.latency.e2e.p99, read.latency.e2e.p99);
  near(totals.latency.model.p90, read.latency.model.p90);
  expect(totals.versions.draft.latency).toEqual(totals.latency);
  // Another organization's analytics never hold these replies.
  const other = await local.api('GET', `/api/v1/analytics/conversations?from=${today}&to=${today}`, { key: OTHER_KEY });
  expect(other.status).toBe(200);
  expect(other.body.data.totals.latency).toEqual({ e2e: null, model: null });
});

it('the OpenAI-compatible endpoint tells its first reply\'s figures as `latency_ms` (whole and streamed, in the finishing chunk)', async () => {
  const agent = (await local.api('POST', '/api/v1/agents', { body: { name: 'Model desk', begin_message: '' } })).body.data;
  model.script({ text: 'Hello there.', delayMs: MODEL_WAIT_MS });
  const whole = await local.api('POST', '/api/v1/openai/v1/chat/completions', { body: { model: agent.id, messages: [{ role: 'user', content: 'Hi' }] } });
  expect(whole.status).toBe(200);
  expect(whole.body.latency_ms.model).toBeGreaterThanOrEqual(MODEL_WAIT_MS);
  expect(sum(whole.body.latency_ms)).toBe(whole.body.latency_ms.e2e);

  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => (release = r));
  model.script({ text: 'Hello again.', pieces: ['Hello ', 'again.'], holdUntil: held });
  const startedMs = Date.now();
  const response = await fetch(`${local.url}/api/v1/openai/v1/chat/completions`, {
    method: 'POST', headers: { 'x-api-key': local.key, 'content-type': 'application/json' }, body: JSON.stringify({ model: agent.id, stream: true, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  const chunks: any[] = [];
  for await (const e of readSse(response)) {
    if (e.data === '[DONE]') continue;
    chunks.push(e.data);
    if (chunks.filter((c) => c.choices?.[0]?.delta?.content).length === 1) setTimeout(release, HOLD_MS);
  }
  const totalMs = Date.now() - startedMs;
  const finishing = chunks.find((c) => c.choices?.[0]?.finish_reason);
  expect(finishing.latency_ms.e2e).toBeLessThanOrEqual(totalMs - HOLD_MS);
  expect(sum(finishing.latency_ms)).toBe(finishing.latency_ms.e2e);
});

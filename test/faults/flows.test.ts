/**
 * The fault tier over HTTP (issue 36): the whole local runtime under LOCAL_FAULTS, driven as a
 * client would drive AWS (a 503 is retried with the same Idempotency-Key, as the SDKs do). Chat
 * turns that call a webhook tool, the chats' events delivered to a webhook endpoint, documents
 * ingested into a knowledge base; then the invariants: no 5xx but the documented 503, every turn
 * stored or refused, every tool run once per stored call, every event delivered or in the delivery
 * log as failed, every document indexed; and every failure the platform logged is an injected one.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sweepWebhooks } from '../../shared/domain/webhooks/deliveries';
import { usePlatform, type ApiReply } from '../support/platform';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const FAULTS = 'on,dynamo.conflict=0.05,dynamo.throttle=0.004,s3.5xx=0.1,sqs.send=0.05,sqs.redeliver=0.05,model.429=0.05,model.5xx=0.05,model.timeout=0.06,model.malformed=0.06,backoff=0.1,seed=3601';
const CHATS = 12;

const local = usePlatform({ faults: FAULTS });
let receiver: WebhookReceiver;
let shop: Server;
let shopUrl = '';
const toolRuns = new Map<string, number>();

beforeAll(async () => {
  receiver = await startWebhookReceiver();
  shop = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const sku = String(JSON.parse(Buffer.concat(parts).toString('utf8')).arguments.sku);
      toolRuns.set(sku, (toolRuns.get(sku) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sku, in_stock: 3 }));
    });
  });
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}/stock`;
});
afterAll(async () => {
  await receiver?.close();
  await new Promise((r) => shop?.close(r));
});

const statuses: number[] = [];

/** A request as an SDK sends it: a 503 (or a dropped connection) is retried with the same Idempotency-Key. */
async function send<T = any>(method: string, path: string, body?: unknown): Promise<ApiReply<T>> {
  const key = randomUUID();
  for (let attempt = 1; ; attempt++) {
    const reply = await local().api<T>(method, path, { body, ...(method === 'POST' ? { headers: { 'Idempotency-Key': key } } : {}) });
    statuses.push(reply.status);
    if ((reply.status !== 503 && !(reply.status === 409 && /in progress/.test(JSON.stringify(reply.body)))) || attempt >= 6) return reply;
    await new Promise((r) => setTimeout(r, 50 * attempt));
  }
}

it('chat turns with tools, outbound calls, webhook deliveries to a failing receiver, knowledge-base ingest and a gated test suite hold their invariants under faults', async () => {
  const { platform, expectFailures } = local();
  // Only injected faults may fail a batch or a request; anything else they cause is a defect.
  expectFailures(/\(injected\)/);
  // The documented answers to a model that failed: 503 (retryable; retried below) and 502 (malformed).
  expectFailures(/answered 50[23]: .*"code":"(UNAVAILABLE|BAD_GATEWAY|MODEL_ERROR)"/);

  const hook = await send('POST', '/api/v1/webhooks', { url: `${receiver.url}/chats`, events: ['chat.started', 'chat.ended', 'call.ended'] });
  expect(hook.status).toBe(200);
  // The receiver fails its first deliveries (5xx): they are retried on the delivery schedule.
  receiver.answer(500, 503, 500, 502, 500);
  const tool = await send('POST', '/api/v1/tools', {
    name: 'Stock', type: 'webhook', url: shopUrl,
    definition: { name: 'stock_level', description: 'Units in stock', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } },
  });
  expect(tool.status).toBe(200);
  const agent = await send('POST', '/api/v1/agents', { name: 'Stock agent', prompt: 'Answer stock questions.', selected_tools: [{ tool_id: tool.body.data.id }] });
  expect(agent.status).toBe(200);
  const kb = await send('POST', '/api/v1/rag/knowledge-bases', { name: 'Faults', description: 'Documents ingested under faults' });
  expect(kb.status).toBe(200);
  const kbId = kb.body.data.id as string;

  // Outbound calls on the simulated carrier (answered, voicemail, busy, answered), placed while the chats run.
  const number = await send('POST', '/api/v1/phone-numbers/import', { phone: '+14155550142', type: 'pstn' });
  expect(number.status).toBe(200);
  const callsPlaced = Promise.all(['+14155550121', '+14155550136', '+14155550148', '+14155550153'].map((to) =>
    send('POST', '/api/v1/calls', { agent_id: agent.body.data.id, from_phone_number: '+14155550142', to_phone_number: to })));

  // Documents, ingested while the chats run.
  const docs = Array.from({ length: 8 }, (_, i) => `doc-${i}`);
  const ingests = Promise.all(docs.map((doc, i) => send('POST', '/api/v1/rag/ingest', { kb_id: kbId, doc_id: doc, title: `Document ${i}`, text: `Fact number ${i}: the warehouse ${i} ships on weekday ${i % 5}.` })));

  // Chats of two turns each, every turn calling the tool with a sku of its own.
  const chats = await Promise.all(Array.from({ length: CHATS }, async (_, c) => {
    const chat = await send('POST', '/api/v1/chats', { agent_id: agent.body.data.id });
    expect(chat.status).toBe(200);
    const id = chat.body.data.id as string;
    const turns = [];
    for (let t = 0; t < 2; t++) turns.push(await send('POST', `/api/v1/chats/${id}/messages`, { content: `Check stock_level sku=C${c}T${t} please` }));
    const ended = await send('POST', `/api/v1/chats/${id}/end`);
    return { id, turns, ended };
  }));
  for (const reply of await ingests) expect(reply.status).toBe(200);
  const calls = await callsPlaced;
  for (const call of calls) expect(call.status).toBe(200);
  // Each call rings 1 s and talks 3 s (SIMULATED_CALL_SECONDS): wait for every one to end.
  const ended = async (id: string) => {
    for (let i = 0; i < 120; i++) {
      const read = await send('GET', `/api/v1/calls/${id}`);
      if (read.body.data.status === 'ended') return read.body.data;
      await new Promise((r) => setTimeout(r, 250));
    }
    const { db, tableName } = await import('../../shared/db/client');
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const { keys } = await import('../../shared/db/keys');
    const item = (await db().send(new GetCommand({ TableName: tableName(), Key: keys.call(platform.keys[0]!.organizationId, id) }))).Item;
    throw new Error(`call ${id} did not end: ${JSON.stringify(item)} queue: ${JSON.stringify(platform.queue.stats()['call-events'])} ${JSON.stringify(platform.queue.stats()['call-place'])}`);
  };
  const endedCalls = await Promise.all(calls.map((c) => ended(c.body.data.id as string)));
  await platform.queue.waitForIdle(120_000);
  // Half an hour later: the minute's webhook sweep has run (it sends what a failed send left undispatched).
  await sweepWebhooks(Date.now() + 30 * 60_000);
  await platform.queue.waitForIdle(120_000);

  // No 5xx but the documented 502 and 503 (retried above); every turn stored or refused.
  expect(statuses.filter((s) => s >= 500 && s !== 502 && s !== 503)).toEqual([]);
  const stored: string[] = [];
  for (const { id, turns, ended } of chats) {
    expect(ended.status).toBe(200);
    const read = await send('GET', `/api/v1/chats/${id}`);
    expect(read.status).toBe(200);
    const results = (read.body.data.messages as { role: string; result?: { sku?: string } }[]).filter((m) => m.role === 'tool_result');
    for (const turn of turns) expect([200, 502, 503]).toContain(turn.status);
    // A turn answered 200 has its tool's result; one refused after its tool ran keeps it (docs/api.md, "The model").
    const skus = results.map((r) => r.result!.sku!);
    turns.forEach((turn, t) => turn.status === 200 && expect(skus).toContain(`C${chats.indexOf(chats.find((x) => x.id === id)!)}T${t}`));
    stored.push(...skus);
  }
  // Nothing done twice: each stored tool call ran the tool once (a retried turn continues, its tools do not run again),
  // and no tool ran that left no stored result.
  expect(Object.fromEntries(stored.map((sku) => [sku, toolRuns.get(sku)]))).toEqual(Object.fromEntries(stored.map((sku) => [sku, 1])));
  expect([...toolRuns.keys()].filter((sku) => sku.startsWith('C') && !stored.includes(sku))).toEqual([]);

  // Every event delivered (at least once, answered 200) or in the delivery log as failed.
  const delivered = new Set(receiver.received.filter((_, i) => i >= 5).map((r) => JSON.parse(r.body).id as string));
  const events: { id: string; type: string }[] = [];
  for (let cursor: string | null = ''; cursor !== null;) {
    const page: ApiReply = await send('GET', `/api/v1/events?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
    expect(page.status).toBe(200);
    events.push(...page.body.data);
    cursor = page.body.meta.next_cursor;
  }
  const chatEvents = events.filter((e) => e.type === 'chat.started' || e.type === 'chat.ended' || e.type === 'call.ended');
  expect(chatEvents).toHaveLength(CHATS * 2 + calls.length);
  // Every call ended exactly once (one call.ended each), the answered ones with their transcript.
  expect(chatEvents.filter((e) => e.type === 'call.ended').map((e) => (e as unknown as { data: { id: string } }).data.id).sort()).toEqual(endedCalls.map((c) => c.id).sort());
  expect(endedCalls.map((c) => c.disconnection_reason)).toEqual(['completed', 'voicemail', 'busy', 'completed']);
  for (const c of [endedCalls[0], endedCalls[3]]) expect(c.transcript.length).toBeGreaterThan(0);
  const log = await send('GET', `/api/v1/webhooks/${hook.body.data.id}/deliveries?limit=100`);
  const failedInLog = new Set((log.body.data as { event_id: string; status: string }[]).filter((d) => d.status === 'failed').map((d) => d.event_id));
  expect(chatEvents.filter((e) => !delivered.has(e.id) && !failedInLog.has(e.id))).toEqual([]);

  // Every document indexed, and found.
  const listed = await send('GET', `/api/v1/rag/documents?kb_id=${kbId}&limit=100`);
  expect(Object.fromEntries((listed.body.data as { doc_id: string; status: string }[]).map((d) => [d.doc_id, d.status]))).toEqual(Object.fromEntries(docs.map((d) => [d, 'indexed'])));
  const query = await send('POST', '/api/v1/rag/query', { kb_id: kbId, query: 'warehouse 5 ships' });
  expect(query.status).toBe(200);

  // A test suite with a gated publish: the run ends, every test has one result, and the publish
  // takes the run exactly when every result passed (a model fault makes a test an error).
  const tests = await Promise.all(Array.from({ length: 4 }, (_, i) => send('POST', `/api/v1/agents/${agent.body.data.id}/tests`, {
    name: `Stock ${i}`, user: { turns: [`Check stock_level sku=S${i} please`] },
    tool_mocks: [{ tool: 'stock_level', output: { in_stock: i } }], criteria: [{ type: 'tool_called', tool: 'stock_level', arguments: { sku: `S${i}` } }],
  })));
  for (const t of tests) expect(t.status).toBe(200);
  const run = await send('POST', `/api/v1/agents/${agent.body.data.id}/test-runs`, {});
  expect(run.status).toBe(200);
  let finished: ApiReply | undefined;
  for (let i = 0; i < 240; i++) {
    await platform.queue.waitForIdle(120_000);
    const read = await send('GET', `/api/v1/agents/${agent.body.data.id}/test-runs/${run.body.data.id}?results_limit=100`);
    if (read.body.data.status === 'completed') {
      finished = read;
      break;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  expect(finished?.body.data.summary.total).toBe(4);
  expect(finished!.body.data.results).toHaveLength(4);
  const summary = finished!.body.data.summary;
  const publish = await send('POST', `/api/v1/agents/${agent.body.data.id}/versions`, { test_run_id: run.body.data.id });
  expect(publish.status).toBe(summary.passed === 4 ? 200 : 422);
  if (publish.status === 200) expect(publish.body.data).toMatchObject({ version: 1, test_run_id: run.body.data.id });
  // A test never acts on the world: the shop saw no sku of the suite.
  expect([...toolRuns.keys()].filter((sku) => sku.startsWith('S'))).toEqual([]);

  const injected = platform.faults!.injected();
  console.log(`fault tier, HTTP flows: ${JSON.stringify({ faults: FAULTS, requests: statuses.length, statuses: countBy(statuses), turns: countBy(chats.flatMap((c) => c.turns.map((t) => t.status))), tool_runs: stored.length, events: chatEvents.length, calls: endedCalls.map((c) => c.disconnection_reason), delivered: chatEvents.filter((e) => delivered.has(e.id)).length, documents: docs.length, test_run: summary, published: publish.status === 200, faults_injected: injected })}`);
  // The flows met the faults that reach them.
  for (const kind of ['dynamo.conflict', 'dynamo.unprocessed', 'sqs.redeliver', 'model.429', 'model.5xx'] as const) expect(injected[kind]).toBeGreaterThan(0);
}, 300_000);

function countBy(values: number[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/**
 * The synthesized stack (issue 41), flows that need no call: a chat whose model asks for a webhook
 * tool (the platform calls it, signed; the answer uses its result), a signed webhook delivery
 * verified with the Standard Webhooks library, a knowledge base fed by text and by an upload to
 * S3 (presigned PUT) then searched, and a publish gated on the agent's tests. Each runs through the
 * template's functions, roles and queues, and leaves no AccessDenied or missing setting behind.
 */
import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { provisionOrganizationKey } from '../../shared/local/stack/provision';
import { startJsonEndpoint } from '../support/json-endpoint';
import { verifyDelivery } from '../support/webhook-receiver';
import { eventually, expectCleanStack, useStackTier } from './support';

const tier = useStackTier({ runTasks: false });
const api = (...args: Parameters<ReturnType<typeof tier>['api']>) => tier().api(...args);

/** The stock tool's endpoint (JSON answers; the webhook receiver answers text). */
let site: Awaited<ReturnType<typeof startJsonEndpoint>>;
beforeAll(async () => {
  site = await startJsonEndpoint({ in_stock: 3, sku: 'B-12' });
});
afterAll(() => site?.close());

afterEach(() => expectCleanStack(tier().stack));

it('chat: the model asks for a webhook tool, the platform calls it signed, and the answer uses its result', async () => {
  const { model } = tier();
  const tool = (await api('POST', '/api/v1/tools', {
    body: { name: 'Stock', type: 'webhook', url: tier().secure(`${site.url}/stock`), definition: { name: 'stock_level', description: 'Units in stock', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } } },
  })).body.data;
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Stock desk', prompt: 'Answer stock questions.', selected_tools: [{ tool_id: tool.id }] } });
  expect(agent.status).toBe(200);
  const chat = await api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } });
  expect(chat.status).toBe(200);

  model.reset();
  model.script({ toolCalls: [{ name: 'stock_level', arguments: { sku: 'B-12' } }] }, (body) => {
    const result = String(body.messages.find((m: any) => m.role === 'tool')?.content ?? '');
    return { text: `We have ${/"in_stock":(\d+)/.exec(result)?.[1] ?? `no answer (${result})`}.` };
  });
  const turn = await api('POST', `/api/v1/chats/${chat.body.data.id}/messages`, { body: { content: 'How many B-12 do you have?' } });

  expect(turn.status).toBe(200);
  const messages = turn.body.data.messages as any[];
  expect(messages.find((m) => m.role === 'tool_result')).toMatchObject({ result: { in_stock: 3, sku: 'B-12' } });
  expect(messages.at(-1)).toMatchObject({ role: 'agent', content: 'We have 3.' });
  const request = site.requests.at(-1)!;
  expect(new Webhook(tool.secret).verify(request.body, request.headers as Record<string, string>)).toMatchObject({ name: 'stock_level', arguments: { sku: 'B-12' }, conversation: { type: 'chat', id: chat.body.data.id } });
  // The model was asked with the key the operator put in the LLM secret.
  expect(model.requests[0]!.authorization).toBe('Bearer sk-stand-in-llm');
});

it('webhook delivery: an event reaches the endpoint signed, and verifies with its secret', async () => {
  const { receiver, stack } = tier();
  // An organization of its own: a function's container trusts its copy of an organization's
  // endpoints for a minute (webhooks/service.ts, ENDPOINTS_CACHE_MS), and the other tests' events
  // made such copies (an endpoint added since is reached by the sweep, a minute or two later).
  const key = `vap_${randomBytes(24).toString('base64url')}`;
  await provisionOrganizationKey(stack, { key, name: 'Webhooks' });
  const endpoint = (await api('POST', '/api/v1/webhooks', { key, body: { url: tier().secure(`${receiver.url}/crm`), events: ['appointment.booked'] } })).body.data;
  const agent = (await api('POST', '/api/v1/agents', { key, body: { name: 'Booker' } })).body.data;
  const booked = await api('POST', '/api/v1/scheduler/appointments', { key, body: { agent_id: agent.id, start_time: '2032-02-02T10:00:00Z', duration_minutes: 15, attendee_name: 'Ada Lovelace' } });
  expect(booked.status).toBe(200);

  const [delivery] = await receiver.waitFor(1, (r) => r.path === '/crm', 30_000);
  const verified = verifyDelivery(endpoint.secret, delivery!) as any;
  expect(verified).toMatchObject({ type: 'appointment.booked', data: { id: booked.body.data.id } });
  await stack.queues.waitForIdle(20_000);
  const deliveries = await api('GET', `/api/v1/webhooks/${endpoint.id}/deliveries`, { key });
  expect(deliveries.status).toBe(200);
  expect(deliveries.body.data).toEqual([expect.objectContaining({ event_type: 'appointment.booked', succeeded: true, status_code: 200, attempt: 1 })]);
});

it('knowledge base: text and an uploaded document are ingested through the queue, indexed and found', async () => {
  const { stack, organizationId } = tier();
  const kb = (await api('POST', '/api/v1/rag/knowledge-bases', { body: { name: 'Help centre' } })).body.data;
  const text = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kb.id, title: 'Hours', text: 'The shop opens at 9 am and closes at 6 pm on Saturdays.' } });
  expect(text.status).toBe(200);
  const markdown = Buffer.from('# Refunds\n\nYou can ask for a refund within 30 days of purchase; it is paid back to the card.\n');
  const upload = await api('POST', '/api/v1/rag/uploads', { body: { content_type: 'text/markdown', size_bytes: markdown.length, filename: 'refunds.md' } });
  expect(upload.status).toBe(200);
  const put = await fetch(upload.body.data.upload_url, { method: upload.body.data.method, headers: upload.body.data.headers, body: markdown });
  expect(put.status).toBe(200);
  const uploaded = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kb.id, upload_id: upload.body.data.upload_id } });
  expect(uploaded.status).toBe(200);

  await stack.queues.waitForIdle(60_000);
  for (const docId of [text.body.data.documents[0].doc_id, uploaded.body.data.documents[0].doc_id]) {
    const doc = await eventually(() => api('GET', `/api/v1/rag/document?org_id=${organizationId}&doc_id=${encodeURIComponent(docId)}`), (r) => r.body.data?.status !== 'pending' && r.body.data?.status !== 'processing', `document ${docId} indexed`);
    expect(doc.body.data).toMatchObject({ status: 'indexed', error: null });
  }
  const found = await api('POST', '/api/v1/rag/query', { body: { kb_id: kb.id, query: 'How long do I have to ask for a refund?' } });
  expect(found.status).toBe(200);
  expect(found.body.data.passages[0].text).toContain('within 30 days');
});

it('reply_matches patterns in the bundles: the engine, loaded on first use, refuses what RE2 cannot run (400) and judges a run', async () => {
  const { model } = tier();
  model.reset();
  const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Patterns', prompt: 'Greet the caller.', begin_message: 'Hi.' } })).body.data;
  const refused = await api('POST', `/api/v1/agents/${agent.id}/tests`, { body: { name: 'Lookahead', user: { turns: ['hello'] }, criteria: [{ type: 'reply_matches', pattern: '(?=Acme)' }] } });
  expect(refused.status).toBe(400);
  expect(refused.text).toContain('criteria.0.pattern');
  const test = await api('POST', `/api/v1/agents/${agent.id}/tests`, { body: { name: 'Names the shop', user: { turns: ['hello'] }, criteria: [{ type: 'reply_matches', pattern: '(?i)welcome to \\w+' }] } });
  expect(test.status).toBe(200);
  model.script({ text: 'Welcome to Acme! How can I help?' });
  const published = await api('POST', `/api/v1/agents/${agent.id}/versions`, { body: { require_passing_tests: true, description: 'pattern gated' } });
  expect(published.status).toBe(200);
  expect(published.body.data).toMatchObject({ version: 1, test_run_id: expect.any(String) });
});

it('gated publish: refused (422) while a test fails on the model\'s answer, published once the suite passes', async () => {
  const { model } = tier();
  model.reset();
  const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Gated', prompt: 'Greet the caller.', begin_message: 'Hi.' } })).body.data;
  const test = await api('POST', `/api/v1/agents/${agent.id}/tests`, { body: { name: 'Greets by name', user: { turns: ['hello'] }, criteria: [{ type: 'reply_contains', text: 'Welcome to Acme', turn: 'any' }] } });
  expect(test.status).toBe(200);

  const refused = await api('POST', `/api/v1/agents/${agent.id}/versions`, { body: { require_passing_tests: true, description: 'gated' } });
  expect(refused.status).toBe(422);
  expect(refused.body.error.details).toMatchObject({ reason: 'tests_failed', failed_tests: [{ test_id: test.body.data.id, status: 'failed' }] });
  expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data.published_version).toBeNull();

  model.script({ text: 'Welcome to Acme! How can I help?' });
  const published = await api('POST', `/api/v1/agents/${agent.id}/versions`, { body: { require_passing_tests: true, description: 'gated' } });
  expect(published.status).toBe(200);
  expect(published.body.data).toMatchObject({ version: 1, description: 'gated', test_run_id: expect.any(String) });
  expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data.published_version).toBe(1);
  // The suite's runs asked the stand-in model (the deployed conversation model), not a local one.
  expect(model.requests.length).toBeGreaterThanOrEqual(2);
});

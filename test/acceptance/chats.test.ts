/**
 * Black-box: talking to an agent through the chat API of the local runtime, with the default
 * local model: an answer from the knowledge base with its source link, a webhook tool the platform
 * runs (its signed request verified with the `standardwebhooks` package), a `function` tool the
 * caller answers, the agent ending the chat, and every bad input a 4xx naming what was wrong.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

let site: Server;
let base = '';
const toolRequests: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  site = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const body = Buffer.concat(parts).toString('utf8');
      if (req.url === '/hours') {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><head><title>Opening hours</title></head><body><main><h1>Opening hours</h1><p>The Harbor Street store opens at 9 am and closes at 6 pm on weekdays. On Saturdays the store opens at 10 am. Parking is free behind the building.</p></main></body></html>');
        return;
      }
      toolRequests.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'shipped', eta: 'tomorrow' }));
    });
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => site.close(() => r())));

let agentId = '';
let toolSecret = '';

describe('talk to your agent', () => {
  beforeAll(async () => {
    const kb = await api('POST', '/api/v1/rag/knowledge-bases', { body: { name: 'Store FAQ' } });
    expect(kb.status).toBe(200);
    const kbId = kb.body.data.id;
    const ingest = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId, url: `${base}/hours` } });
    expect(ingest.status).toBe(200);
    const docId = ingest.body.data.documents[0].doc_id;
    await until(() => api('GET', `/api/v1/rag/document?org_id=${local().platform.keys[0]!.organizationId}&doc_id=${encodeURIComponent(docId)}`), (r) => r.body.data?.status === 'indexed', 'indexing');
    const webhookTool = await api('POST', '/api/v1/tools', {
      body: { name: 'Order status', type: 'webhook', url: `${base}/orders`, definition: { name: 'order_status', description: 'Status of an order', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } } },
    });
    expect(webhookTool.status).toBe(200);
    toolSecret = webhookTool.body.data.secret;
    const fnTool = await api('POST', '/api/v1/tools', {
      body: { name: 'Cart', type: 'function', definition: { name: 'cart_total', parameters: { type: 'object', properties: { currency: { type: 'string' } }, required: [] } } },
    });
    const agent = await api('POST', '/api/v1/agents', {
      body: {
        name: 'Front desk', agent_name: 'Ava', prompt: 'You are {{agent_name}}, the front desk of Harbor Street. Be brief.',
        begin_message: 'Hi {{name}}, I am {{agent_name}}. How can I help?', knowledge_base: kbId,
        selected_tools: [{ tool_id: webhookTool.body.data.id }, { tool_id: fnTool.body.data.id }, { type: 'end_call' }],
      },
    });
    expect(agent.status).toBe(200);
    agentId = agent.body.data.id;
  });

  it('answers from the knowledge base with its source, keeps the chat, and ends when the user says goodbye', async () => {
    const started = await api('POST', '/api/v1/chats', { body: { agent_id: agentId, dynamic_variables: { name: 'Ada' }, metadata: { order: 7 } } });
    expect(started.status).toBe(200);
    const chat = started.body.data;
    expect(chat).toMatchObject({ status: 'active', channel: 'api', end_reason: null, pending_tool_calls: [], metadata: { order: 7 } });
    expect(chat.messages).toEqual([expect.objectContaining({ role: 'agent', content: 'Hi Ada, I am Ava. How can I help?' })]);

    const asked = await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'When does the store open on weekdays?' } });
    expect(asked.status).toBe(200);
    expect(asked.body.data.chat).toMatchObject({ id: chat.id, status: 'active' });
    const [user, answer] = asked.body.data.messages;
    expect(user).toMatchObject({ role: 'user', content: 'When does the store open on weekdays?' });
    expect(answer.role).toBe('agent');
    expect(answer.content).toMatch(/9 am/);
    expect(answer.sources[0]).toMatchObject({ url: `${base}/hours`, doc_id: expect.any(String), score: expect.any(Number) });

    const bye = await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'Thanks, goodbye!' } });
    expect(bye.body.data.chat).toMatchObject({ status: 'ended', end_reason: 'agent_ended' });
    expect(bye.body.data.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'tool_call', 'tool_result', 'agent']);
    const late = await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'hello?' } });
    expect(late.status).toBe(409);

    const read = await api('GET', `/api/v1/chats/${chat.id}`);
    expect(read.body.data.messages).toHaveLength(7);
    expect(read.body.data.usage).toEqual({ llm_requests: 3, prompt_tokens: 0, completion_tokens: 0 });
    const analysed = await until(() => api('GET', `/api/v1/chats/${chat.id}`), (r) => r.body.data.analysis !== null, 'chat analysis');
    expect(analysed.body.data.analysis.summary).toMatch(/open/i);
    const listed = await api('GET', `/api/v1/chats?agent_id=${agentId}&status=ended`);
    expect(listed.body.data.map((c: { id: string }) => c.id)).toContain(chat.id);
    expect(listed.body.data[0].messages).toBeUndefined();
  });

  it('runs a webhook tool with a signed request, and stops at a function tool until the caller answers it', async () => {
    const chat = (await api('POST', '/api/v1/chats', { body: { agent_id: agentId } })).body.data;
    const turn = await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'Please run order_status order_id=A7' } });
    expect(turn.status).toBe(200);
    const [, call, result, reply] = turn.body.data.messages;
    expect(call).toMatchObject({ role: 'tool_call', name: 'order_status', arguments: { order_id: 'A7' } });
    expect(result).toMatchObject({ role: 'tool_result', tool_call_id: call.tool_call_id, result: { status: 'shipped', eta: 'tomorrow' } });
    expect(reply.role).toBe('agent');
    const request = toolRequests.at(-1)!;
    expect(request.method).toBe('POST');
    const verified = new Webhook(toolSecret).verify(request.body, request.headers as Record<string, string>) as Record<string, any>;
    expect(verified).toMatchObject({ tool_call_id: call.tool_call_id, name: 'order_status', arguments: { order_id: 'A7' }, conversation: { type: 'chat', id: chat.id, agent_id: agentId } });
    expect(request.headers['webhook-id']).toBe(call.tool_call_id);

    const fn = await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'What is my cart_total currency=EUR' } });
    expect(fn.body.data.chat.status).toBe('requires_action');
    const [pending] = fn.body.data.chat.pending_tool_calls;
    expect(pending).toMatchObject({ name: 'cart_total', arguments: { currency: 'EUR' } });
    expect((await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'hello?' } })).status).toBe(409);
    const wrong = await api('POST', `/api/v1/chats/${chat.id}/tool-results`, { body: { results: [{ tool_call_id: 'nope', output: 1 }] } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(['results.0.tool_call_id', 'results']);
    const answered = await api('POST', `/api/v1/chats/${chat.id}/tool-results`, { body: { results: [{ tool_call_id: pending.id, output: { total: 42.5 } }] } });
    expect(answered.status).toBe(200);
    expect(answered.body.data.chat.status).toBe('active');
    expect(answered.body.data.messages.map((m: { role: string }) => m.role)).toEqual(['tool_result', 'agent']);
    expect(answered.body.data.messages[1].content).toMatch(/42\.5/);
  });

  it('answers every bad input with a 4xx naming what was wrong, and keeps organizations apart', async () => {
    const chat = (await api('POST', '/api/v1/chats', { body: { agent_id: agentId } })).body.data;
    const cases: [string, unknown, string][] = [
      [`/api/v1/chats/${chat.id}/messages`, { content: '' }, 'content'],
      [`/api/v1/chats/${chat.id}/messages`, { content: 'x'.repeat(4001) }, 'content'],
      [`/api/v1/chats/${chat.id}/messages`, { content: 'hi', extra: 1 }, ''],
      ['/api/v1/chats', { agent_id: '01900000-0000-7000-8000-000000000000' }, 'agent_id'],
      ['/api/v1/chats', { agent_id: agentId, contact_id: 'nope' }, 'contact_id'],
    ];
    for (const [path, body, field] of cases) {
      const res = await api('POST', path, { body });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      if (field) expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toContain(field);
    }
    expect((await api('POST', `/api/v1/chats/${chat.id}/tool-results`, { body: { results: [{ tool_call_id: 'x', output: 1 }] } })).status).toBe(409);
    // Another organization sees none of it.
    expect((await api('GET', `/api/v1/chats/${chat.id}`, { key: keyB })).status).toBe(404);
    expect((await api('POST', `/api/v1/chats/${chat.id}/messages`, { key: keyB, body: { content: 'hi' } })).status).toBe(404);
    expect((await api('POST', '/api/v1/chats', { key: keyB, body: { agent_id: agentId } })).status).toBe(400);
    expect((await api('GET', '/api/v1/chats', { key: keyB })).body.data).toEqual([]);
    const ended = await api('POST', `/api/v1/chats/${chat.id}/end`);
    expect(ended.body.data).toMatchObject({ status: 'ended', end_reason: 'user_ended' });
    expect((await api('POST', `/api/v1/chats/${chat.id}/end`)).body.data.end_reason).toBe('user_ended');
  });
});

/**
 * Black-box: a webhook tool's signing secret over real HTTP against the local runtime. Create
 * answers it once, get and list never; `POST /tools/{id}/rotate-secret` answers a new one, and
 * the tool's next request in a chat carries both signatures (each verified with the
 * `standardwebhooks` package); function tools and other organizations' tools are refused.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

let receiver: Server;
let base = '';
const requests: { method: string; url: string; headers: IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ in_stock: 3 }));
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

const stockTool = {
  name: 'Stock',
  type: 'webhook',
  definition: { name: 'stock_level', description: 'Units in stock of a product', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } },
};

describe('webhook tool secrets over HTTP', () => {
  it('answers the secret once, rotates it, and the next request verifies with the new and the old secret', async () => {
    // Prepare
    const created = await api('POST', '/api/v1/tools', { body: { ...stockTool, url: `${base}/stock` } });
    expect(created.status).toBe(200);
    const tool = created.body.data;
    expect(tool.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(tool.previous_secret_expires_at).toBeNull();
    // Act
    const rotated = await api('POST', `/api/v1/tools/${tool.id}/rotate-secret`);
    const read = await api('GET', `/api/v1/tools/${tool.id}`);
    const listed = await api('GET', '/api/v1/tools');
    // Assess
    expect(rotated.status).toBe(200);
    expect(rotated.body.message).toBe('Tool secret rotated');
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(tool.secret);
    expect(Date.parse(rotated.body.data.previous_secret_expires_at)).toBeGreaterThan(Date.now() + 23 * 3600_000);
    expect(read.body.data).toEqual({ ...rotated.body.data, secret: undefined });
    expect(JSON.stringify([read.body, listed.body])).not.toMatch(/whsec_|secret"/);

    // The tool runs in a chat (the local model calls a tool named in the message, key=value as arguments).
    const agent = await api('POST', '/api/v1/agents', { body: { name: 'Stock agent', prompt: 'Answer stock questions.', selected_tools: [{ tool_id: tool.id }] } });
    expect(agent.status).toBe(200);
    const chat = await api('POST', '/api/v1/chats', { body: { agent_id: agent.body.data.id } });
    expect(chat.status).toBe(200);
    const turn = await api('POST', `/api/v1/chats/${chat.body.data.id}/messages`, { body: { content: 'Check stock_level sku=B-12 please' } });
    expect(turn.status).toBe(200);
    const result = turn.body.data.messages.find((m: { role: string }) => m.role === 'tool_result');
    expect(result).toMatchObject({ result: { in_stock: 3 } });
    const request = requests.at(-1)!;
    const headers = request.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(new Webhook(rotated.body.data.secret).verify(request.body, headers)).toMatchObject({ name: 'stock_level', arguments: { sku: 'B-12' }, conversation: { type: 'chat', id: chat.body.data.id } });
    expect(() => new Webhook(tool.secret).verify(request.body, headers)).not.toThrow();
  });

  it('refuses rotate-secret on a function tool (400 naming type), another organization\'s tool and an unknown id (404)', async () => {
    const fn = await api('POST', '/api/v1/tools', { body: { name: 'Cart', definition: { name: 'cart_total' } } });
    expect(fn.body.data).not.toHaveProperty('secret');
    const hook = await api('POST', '/api/v1/tools', { body: { ...stockTool, url: `${base}/stock` } });

    const onFunction = await api('POST', `/api/v1/tools/${fn.body.data.id}/rotate-secret`);
    const otherOrg = await api('POST', `/api/v1/tools/${hook.body.data.id}/rotate-secret`, { key: keyB });
    const unknown = await api('POST', '/api/v1/tools/0190a4d2-0000-7000-8000-000000000000/rotate-secret');
    const notUuid = await api('POST', '/api/v1/tools/nope/rotate-secret');

    expect(onFunction.status).toBe(400);
    expect(onFunction.body.error.details.fields).toEqual([{ path: 'type', message: 'only webhook tools have a signing secret' }]);
    expect(otherOrg.status).toBe(404);
    expect(unknown.status).toBe(404);
    expect(notUuid.status).toBe(400);
    expect(notUuid.body.error.details.fields[0].path).toBe('id');
  });
});

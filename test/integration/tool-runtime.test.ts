/**
 * Webhook tools at run time (operations.md, "Tools at run time") on DynamoDB Local, against a
 * real HTTP receiver on 127.0.0.1: the signed request verified with the `standardwebhooks`
 * package and the secret answered by create, GET arguments in the query string, error results
 * for a 500, a timeout, a redirect and a refused address, results cut at 16 KiB, and
 * rotate-secret (the new secret verifies; the old one signs beside it for 24 h).
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { v7 as uuidv7 } from 'uuid';
import { resetConfig } from '../../shared/config';
import { keys } from '../../shared/db/keys';
import { getItem, transact, updateExisting } from '../../shared/db/store';
import { executeTool } from '../../shared/domain/conversations/tools/executor';
import { keptTurnOf, runTurn, TurnDeadlineError } from '../../shared/domain/conversations/engine';
import type { LlmPort } from '../../shared/adapters/llm/port';
import { runWebhookTool, TRUNCATION_MARKER } from '../../shared/domain/conversations/tools/webhook';
import { MAX_TOOL_RESULT_BYTES, type ConversationRef, type ToolInvocation } from '../../shared/domain/conversations/types';
import { CreateToolBody } from '../../shared/domain/tools/schemas';
import { createTool, deleteTool, getTool, listTools, rotateToolSecret, updateTool } from '../../shared/domain/tools/service';
import { ValidationError } from '../../shared/errors';
import { rejection } from '../support/rejection';

/** Waits until `check` holds (an event the test cannot await directly), polling briefly. */
async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

interface Got {
  method: string;
  path: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What each path of the receiver answers. */
const routes: Record<string, (res: ServerResponse) => void> = {
  '/json': (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'shipped', eta: 'tomorrow' })),
  '/text': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('The order ships tomorrow.'),
  '/empty': (res) => res.writeHead(204).end(),
  '/fail': (res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('database is down'),
  '/redirect': (res) => res.writeHead(302, { location: '/json' }).end(),
  '/hang': () => undefined, // never answers
  // Never answers, and records when the platform closes the connection (a cancelled request).
  '/hang-watched': (res) => void res.on('close', () => closedWatched.push(Date.now())),
  '/big-json': (res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ rows: Array.from({ length: 2000 }, (_, i) => ({ i, name: `row ${i} é` })) })),
  '/just-fits': (res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(MAX_TOOL_RESULT_BYTES)),
};

const closedWatched: number[] = [];
let server: Server;
let base: string;
const got: Got[] = [];
const sockets = new Set<Socket>();

beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_FETCH = 'true';
  process.env.RUNTIME = 'local';
  resetConfig();
  server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://receiver');
      got.push({ method: req.method ?? '', path: url.pathname, url, headers: req.headers, body: Buffer.concat(parts).toString('utf8') });
      (routes[url.pathname] ?? ((r: ServerResponse) => r.writeHead(404).end()))(res);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

afterEach(() => {
  process.env.ALLOW_LOOPBACK_FETCH = 'true';
  resetConfig();
});

const definition = {
  name: 'order_status',
  description: 'Status of an order',
  parameters: { type: 'object', properties: { order_id: { type: 'string' }, rush: { type: 'boolean' } }, required: ['order_id'] },
};

async function webhookTool(org: string, path: string, over: Record<string, unknown> = {}) {
  return createTool(org, CreateToolBody.parse({ name: 'Order status', type: 'webhook', url: `${base}${path}`, definition, ...over }));
}

function conversationOf(org: string): ConversationRef {
  return {
    type: 'chat',
    id: uuidv7(),
    organization_id: org,
    agent_id: uuidv7(),
    contact_id: uuidv7(),
    dynamic_variables: { customer_tier: 'gold' },
    metadata: { source: 'test' },
  };
}

const call = (args: Record<string, unknown> = { order_id: 'A7' }): ToolInvocation => ({ id: `call_${uuidv7()}`, name: 'order_status', arguments: args });
const requestsTo = (path: string) => got.filter((g) => g.path === path);

describe('webhook tools at run time', () => {
  it('cancels a tool still running at the turn\'s deadline: the connection is closed and the call recorded as timed out', async () => {
    // Prepare: a tool that would wait 10 s, in a turn with 400 ms left; the model calls it once.
    const org = uuidv7();
    const tool = await webhookTool(org, '/hang-watched', { timeout_ms: 10_000 });
    let asked = 0;
    const llm: LlmPort = {
      name: 'local',
      complete: async () => (asked++ ? { text: 'too late', toolCalls: [], usage: { promptTokens: 0, completionTokens: 0 } } : { text: '', toolCalls: [{ id: 'call_slow', name: 'order_status', arguments: '{"order_id":"A7"}' }], usage: { promptTokens: 0, completionTokens: 0 } }),
    };
    const closedBefore = closedWatched.length;
    const started = Date.now();
    // Act
    const err = await runTurn({
      llm, model: 'm', temperature: 0, system: 's', passages: [], history: [], userText: 'Where is A7?',
      tools: [{ kind: 'webhook', toolId: tool.id, name: 'order_status', description: definition.description, parameters: definition.parameters, selection: { tool_id: tool.id } }],
      conversation: conversationOf(org),
      deadlineMs: Date.now() + 400,
    }).catch((e) => e);
    // Assess: the turn is out of time, having cancelled the tool at the deadline, long before its own 10 s.
    expect(err).toBeInstanceOf(TurnDeadlineError);
    expect(Date.now() - started).toBeLessThan(3_000);
    const kept = keptTurnOf(err)!;
    expect(kept.messages.map((m) => m.role)).toEqual(['user', 'tool_call', 'tool_result']);
    expect(kept.messages[2]!.result).toEqual({ error: expect.stringMatching(/^timed out/) });
    // The receiver sees its connection closed (not left open until the tool's own timeout).
    await until(() => closedWatched.length > closedBefore);
    expect(closedWatched.at(-1)! - started).toBeLessThan(3_000);
  });

  it('runs a webhook request to its end without a signal, and cancels it when its signal aborts', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/hang-watched', { timeout_ms: 10_000 });
    const abort = new AbortController();
    const closedBefore = closedWatched.length;
    setTimeout(() => abort.abort(), 200);
    const outcome = await runWebhookTool(org, tool.id, call(), conversationOf(org), { signal: abort.signal });
    expect(outcome).toEqual({ ok: false, result: { error: expect.stringMatching(/^timed out: the tool was cancelled/) } });
    await until(() => closedWatched.length > closedBefore);
    const viaExecutor = await executeTool({ kind: 'webhook', toolId: (await webhookTool(org, '/json')).id, name: 'order_status', description: '', parameters: definition.parameters, selection: {} }, call(), conversationOf(org), { signal: new AbortController().signal });
    expect(viaExecutor).toEqual({ ok: true, result: { status: 'shipped', eta: 'tomorrow' } });
  });

  it('sends a signed JSON request that the standardwebhooks package verifies with the secret answered by create', async () => {
    // Prepare
    const org = uuidv7();
    const tool = await webhookTool(org, '/json', { headers: { 'x-api-key': 'k-123', 'Webhook-Signature': 'v1,forged', 'Content-Type': 'text/plain' } });
    const conversation = conversationOf(org);
    const invocation = call({ order_id: 'A7', rush: true });
    // Act
    const outcome = await runWebhookTool(org, tool.id, invocation, conversation);
    // Assess
    expect(outcome).toEqual({ ok: true, result: { status: 'shipped', eta: 'tomorrow' } });
    const request = requestsTo('/json').at(-1)!;
    expect(request.method).toBe('POST');
    expect(tool.secret).toMatch(/^whsec_/);
    const verified = new Webhook(tool.secret!).verify(request.body, request.headers as Record<string, string>);
    expect(verified).toEqual({
      tool_call_id: invocation.id,
      name: 'order_status',
      arguments: { order_id: 'A7', rush: true },
      conversation: { type: 'chat', id: conversation.id, agent_id: conversation.agent_id, contact_id: conversation.contact_id, dynamic_variables: { customer_tier: 'gold' }, visitor_variables: {}, metadata: { source: 'test' } },
    });
    expect(request.headers['webhook-id']).toBe(invocation.id);
    expect(request.headers['x-api-key']).toBe('k-123');
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toMatch(/VoiceAgentPlatform-Tools/);
    // A secret of another tool does not verify it.
    const other = await webhookTool(org, '/json');
    expect(() => new Webhook(other.secret!).verify(request.body, request.headers as Record<string, string>)).toThrow();
  });

  it('never shows the secret after create, and a function tool has none', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/json');
    const fn = await createTool(org, CreateToolBody.parse({ name: 'Cart', definition: { name: 'cart_total' } }));
    const read = await getTool(org, tool.id);
    const listed = await listTools(org, { limit: 10 });
    expect(fn).not.toHaveProperty('secret');
    expect(fn).not.toHaveProperty('previous_secret_expires_at');
    expect(read).not.toHaveProperty('secret');
    expect(read.previous_secret_expires_at).toBeNull();
    expect(JSON.stringify([read, listed])).not.toMatch(/whsec_|secret_sealed|v1:local:/);
  });

  it('puts GET arguments in the query string, sends no body, and signs the query string', async () => {
    // Prepare
    const org = uuidv7();
    const tool = await webhookTool(org, '/text', { method: 'GET' });
    const invocation = call({ order_id: 'A 7&x=1', rush: false });
    // Act
    const outcome = await runWebhookTool(org, tool.id, invocation, conversationOf(org));
    // Assess
    expect(outcome).toEqual({ ok: true, result: 'The order ships tomorrow.' });
    const request = requestsTo('/text').at(-1)!;
    expect(request.method).toBe('GET');
    expect(request.body).toBe('');
    expect(request.headers['content-type']).toBeUndefined();
    expect(Object.fromEntries(request.url.searchParams)).toEqual({ order_id: 'A 7&x=1', rush: 'false' });
    const query = request.url.search.slice(1);
    expect(() => new Webhook(tool.secret!).verify(query, request.headers as Record<string, string>, { jsonParse: false })).not.toThrow();
    // Changed arguments do not verify.
    expect(() => new Webhook(tool.secret!).verify(query.replace('rush=false', 'rush=true'), request.headers as Record<string, string>, { jsonParse: false })).toThrow();
  });

  it('answers an empty body as null', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/empty', { method: 'DELETE' });
    expect(await runWebhookTool(org, tool.id, call(), conversationOf(org))).toEqual({ ok: true, result: null });
    expect(requestsTo('/empty').at(-1)!.method).toBe('DELETE');
  });

  it('turns a 500 into an error result with its status and body', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/fail');
    const outcome = await runWebhookTool(org, tool.id, call(), conversationOf(org));
    expect(outcome).toEqual({ ok: false, result: { error: 'the tool answered HTTP 500: database is down' } });
  });

  it('gives up on a tool that does not answer within its timeout_ms', async () => {
    // Prepare
    const org = uuidv7();
    const tool = await webhookTool(org, '/hang', { timeout_ms: 300 });
    const started = Date.now();
    // Act
    const outcome = await runWebhookTool(org, tool.id, call(), conversationOf(org));
    // Assess
    const elapsed = Date.now() - started;
    expect(outcome).toEqual({ ok: false, result: { error: 'the tool timed out after 300 ms' } });
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(2_000);
    expect(requestsTo('/hang')).toHaveLength(1);
  });

  it('does not follow a redirect', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/redirect');
    const before = requestsTo('/json').length;
    const outcome = await runWebhookTool(org, tool.id, call(), conversationOf(org));
    expect(outcome).toEqual({ ok: false, result: { error: 'the tool answered a redirect (HTTP 302), which is not followed' } });
    await new Promise((r) => setTimeout(r, 100));
    expect(requestsTo('/json')).toHaveLength(before);
  });

  it('refuses loopback unless ALLOW_LOOPBACK_FETCH, and private addresses always, without sending anything', async () => {
    // Prepare
    const org = uuidv7();
    const loopback = await webhookTool(org, '/json');
    const privateTool = await webhookTool(org, '/json', { url: 'http://10.1.2.3/orders' });
    const before = got.length;
    // Act
    const alwaysRefused = await runWebhookTool(org, privateTool.id, call(), conversationOf(org));
    process.env.ALLOW_LOOPBACK_FETCH = 'false';
    resetConfig();
    const refused = await runWebhookTool(org, loopback.id, call(), conversationOf(org));
    // Assess
    expect(alwaysRefused).toEqual({ ok: false, result: { error: "the tool's URL is refused: 10.1.2.3 is a private address" } });
    expect(refused).toEqual({ ok: false, result: { error: "the tool's URL is refused: 127.0.0.1 is a loopback address (set ALLOW_LOOPBACK_FETCH=true to allow loopback locally)" } });
    expect(got.length).toBe(before);
  });

  it('keeps at most 16 KiB of a result: a longer answer is its cut text with a marker, never cut JSON', async () => {
    // Prepare
    const org = uuidv7();
    const big = await webhookTool(org, '/big-json');
    const fits = await webhookTool(org, '/just-fits');
    // Act
    const cut = await runWebhookTool(org, big.id, call(), conversationOf(org));
    const whole = await runWebhookTool(org, fits.id, call(), conversationOf(org));
    // Assess
    expect(cut.ok).toBe(true);
    expect(typeof cut.result).toBe('string');
    const text = cut.result as string;
    expect(text.startsWith('{"rows":[{"i":0,"name":"row 0 é"}')).toBe(true);
    expect(text.endsWith(TRUNCATION_MARKER)).toBe(true);
    expect(Buffer.byteLength(text, 'utf8')).toBeLessThanOrEqual(MAX_TOOL_RESULT_BYTES);
    expect(Buffer.byteLength(text, 'utf8')).toBeGreaterThan(MAX_TOOL_RESULT_BYTES - 100);
    expect(text).not.toContain('\uFFFD');
    expect(whole).toEqual({ ok: true, result: 'x'.repeat(MAX_TOOL_RESULT_BYTES) });
  });

  it('answers an error result for an inactive or deleted tool, without calling it', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/json');
    const before = got.length;
    await updateTool(org, tool.id, { isActive: false });
    const inactive = await runWebhookTool(org, tool.id, call(), conversationOf(org));
    await deleteTool(org, tool.id);
    const deleted = await runWebhookTool(org, tool.id, call(), conversationOf(org));
    expect(inactive).toEqual({ ok: false, result: { error: 'the tool order_status is inactive' } });
    expect(deleted).toEqual({ ok: false, result: { error: 'the tool order_status no longer exists' } });
    expect(got.length).toBe(before);
  });

  it('never sends invalid arguments to the tool (the executor checks them first)', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/json');
    const before = got.length;
    const runnable = { kind: 'webhook' as const, toolId: tool.id, name: 'order_status', description: '', parameters: definition.parameters, selection: { tool_id: tool.id } };
    const outcome = await executeTool(runnable, call({ rush: 'yes' }), conversationOf(org));
    expect(outcome).toEqual({ ok: false, result: { error: 'invalid arguments: "order_id" is required; "rush" must be a boolean' } });
    expect(got.length).toBe(before);
  });
});

describe('rotate-secret of a webhook tool', () => {
  it('answers a new secret once; requests carry both signatures for 24 h, so either secret verifies', async () => {
    // Prepare
    const org = uuidv7();
    const tool = await webhookTool(org, '/json');
    // Act
    const rotated = await rotateToolSecret(org, tool.id);
    await runWebhookTool(org, tool.id, call(), conversationOf(org));
    // Assess
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(tool.secret);
    const expires = Date.parse(rotated.previous_secret_expires_at!);
    expect(expires - Date.now()).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(24 * 3600_000);
    const read = await getTool(org, tool.id);
    expect(read).not.toHaveProperty('secret');
    expect(read.previous_secret_expires_at).toBe(rotated.previous_secret_expires_at);
    const request = requestsTo('/json').at(-1)!;
    expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
    const headers = request.headers as Record<string, string>;
    expect(() => new Webhook(rotated.secret).verify(request.body, headers)).not.toThrow();
    expect(() => new Webhook(tool.secret!).verify(request.body, headers)).not.toThrow();
  });

  it('stops signing with the old secret once its overlap is over', async () => {
    const org = uuidv7();
    const tool = await webhookTool(org, '/json');
    const rotated = await rotateToolSecret(org, tool.id);
    await transact([updateExisting(keys.tool(org, tool.id), { previous_secret_expires_at: new Date(Date.now() - 1000).toISOString() })]);
    await runWebhookTool(org, tool.id, call(), conversationOf(org));
    const request = requestsTo('/json').at(-1)!;
    const headers = request.headers as Record<string, string>;
    expect(String(headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(() => new Webhook(rotated.secret).verify(request.body, headers)).not.toThrow();
    expect(() => new Webhook(tool.secret!).verify(request.body, headers)).toThrow();
  });

  it('refuses a function tool (400 naming type) and 404s an unknown one', async () => {
    const org = uuidv7();
    const fn = await createTool(org, CreateToolBody.parse({ name: 'Cart', definition: { name: 'cart_total' } }));
    const onFunction = await rejection(rotateToolSecret(org, fn.id));
    const unknown = await rejection(rotateToolSecret(org, uuidv7()));
    expect(onFunction).toBeInstanceOf(ValidationError);
    expect(onFunction.details.fields).toEqual([{ path: 'type', message: 'only webhook tools have a signing secret' }]);
    expect(unknown.statusCode).toBe(404);
  });

  it('gives a webhook tool with no secret one on first use, and rotate-secret then answers one that verifies', async () => {
    // Prepare: a tool stored before tools had secrets.
    const org = uuidv7();
    const tool = await webhookTool(org, '/json');
    await transact([updateExisting(keys.tool(org, tool.id), {}, { remove: ['secret_sealed'] })]);
    // Act
    await runWebhookTool(org, tool.id, call(), conversationOf(org));
    const firstUse = requestsTo('/json').at(-1)!;
    const stored = await getItem<Record<string, unknown>>(keys.tool(org, tool.id));
    const rotated = await rotateToolSecret(org, tool.id);
    await runWebhookTool(org, tool.id, call(), conversationOf(org));
    const afterRotation = requestsTo('/json').at(-1)!;
    // Assess
    expect(firstUse.headers['webhook-signature']).toMatch(/^v1,/);
    expect(stored!.secret_sealed).toEqual(expect.any(String));
    expect(() => new Webhook(rotated.secret).verify(afterRotation.body, afterRotation.headers as Record<string, string>)).not.toThrow();
  });

  it('drops the secrets of a tool turned into a function tool; made a webhook again, it signs with a new one', async () => {
    // Prepare
    const org = uuidv7();
    const tool = await webhookTool(org, '/json');
    await rotateToolSecret(org, tool.id);
    // Act
    const fn = await updateTool(org, tool.id, { type: 'function' });
    const asFunction = await getItem<Record<string, unknown>>(keys.tool(org, tool.id));
    const again = await updateTool(org, tool.id, { type: 'webhook', url: `${base}/json` });
    await runWebhookTool(org, tool.id, call(), conversationOf(org));
    const request = requestsTo('/json').at(-1)!;
    // Assess
    expect(fn).not.toHaveProperty('previous_secret_expires_at');
    expect(await getTool(org, tool.id)).toEqual(again);
    for (const field of ['secret_sealed', 'previous_secret_sealed', 'previous_secret_expires_at']) expect(asFunction).not.toHaveProperty(field);
    expect(again.previous_secret_expires_at).toBeNull();
    expect(() => new Webhook(tool.secret!).verify(request.body, request.headers as Record<string, string>)).toThrow();
  });
});

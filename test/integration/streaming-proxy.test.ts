/**
 * The streaming routes' functions run through the Lambda proxy contract (docs/api.md, "Streaming a
 * turn"; ../shared/spec/references.md, AWS Lambda): behind the HTTP API (payload 2.0, buffered) a
 * proxy response's `body` must be a string, so a stream is answered as its complete SSE text once
 * it ends; behind the streaming REST API (payload 1.0, `streamHandler`, response streaming) the
 * events are written as they come. Real entry files against DynamoDB Local, the local model.
 */
import type { APIGatewayProxyEvent, Context } from 'aws-lambda';
import { createOrganizationWithKey } from '../../shared/domain/api-keys/provision';
import { apiEvent, lambdaContext } from '../support/events';

let key = '';
let agentId = '';

type ProxyResult = { statusCode: number; headers?: Record<string, string>; body?: unknown; isBase64Encoded?: boolean };
type Handler = (event: unknown, context: Context) => Promise<ProxyResult>;
const load = async (entry: string) => (await import(`../../functions/${entry}`)) as { handler: Handler };

beforeAll(async () => {
  ({ key } = await createOrganizationWithKey({ name: 'proxy contract' }));
  const created = await (await load('agents/create.ts')).handler(
    apiEvent({ method: 'POST', path: '/api/v1/agents', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: { name: 'Proxy', prompt: 'Answer briefly.', begin_message: '' } }),
    lambdaContext,
  );
  agentId = JSON.parse(created.body as string).data.id;
});

/** A fresh context each call (the runtime gives every invocation its own). */
const context = () => ({ ...lambdaContext }) as Context;

describe('behind the HTTP API (buffered): a string body holding every event', () => {
  it('answers an OpenAI-compatible stream as its complete text: chunks, then [DONE]', async () => {
    const { handler } = await load('openai/chat-completions.ts');
    const result = await handler(
      apiEvent({ method: 'POST', path: '/api/v1/openai/v1/chat/completions', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: { model: agentId, messages: [{ role: 'user', content: 'Hello there' }], stream: true } }),
      context(),
    );
    expect(result.statusCode).toBe(200);
    expect(result.headers?.['content-type']).toMatch(/^text\/event-stream/);
    expect(typeof result.body).toBe('string');
    const lines = (result.body as string).split('\n\n').filter(Boolean);
    expect(lines.at(-1)).toBe('data: [DONE]');
    expect(JSON.parse(lines[0]!.slice(6))).toMatchObject({ object: 'chat.completion.chunk', model: `${agentId}@draft` });
    // Nothing of the stream object leaks into the answer.
    expect(result.body as string).not.toMatch(/"chunks"|contentType/);
  });

  it('answers a chat turn asked as text/event-stream as its complete events, ending turn.completed', async () => {
    const start = await (await load('chats/start.ts')).handler(
      apiEvent({ method: 'POST', path: '/api/v1/chats', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: { agent_id: agentId } }),
      context(),
    );
    const chatId = JSON.parse(start.body as string).data.id;
    const result = await (await load('chats/send-message.ts')).handler(
      apiEvent({ method: 'POST', path: `/api/v1/chats/${chatId}/messages`, pathParameters: { id: chatId }, headers: { 'x-api-key': key, 'content-type': 'application/json', accept: 'text/event-stream' }, body: { content: 'Hi' } }),
      context(),
    );
    expect(result.statusCode).toBe(200);
    expect(typeof result.body).toBe('string');
    const events = [...(result.body as string).matchAll(/^event: (.+)$/gm)].map((m) => m[1]);
    expect(events.at(-1)).toBe('turn.completed');
    expect(events).toContain('message.completed');
  });

  it('answers the models list as OpenAI JSON', async () => {
    const result = await (await load('openai/models.ts')).handler(apiEvent({ method: 'GET', path: '/api/v1/openai/v1/models', headers: { authorization: `Bearer ${key}` } }), context());
    expect(JSON.parse(result.body as string)).toMatchObject({ object: 'list', data: expect.arrayContaining([expect.objectContaining({ id: agentId })]) });
  });
});

describe('behind the streaming REST API (payload 1.0, response streaming)', () => {
  afterEach(() => {
    delete (globalThis as { awslambda?: unknown }).awslambda;
  });

  /** Lambda's `awslambda` global, as the Node.js runtime defines it, recording each write. */
  function runtime() {
    const writes: string[] = [];
    let prelude: unknown;
    (globalThis as { awslambda?: unknown }).awslambda = {
      streamifyResponse: (fn: unknown) => ({ streamified: fn }),
      HttpResponseStream: { from: (stream: unknown, p: unknown) => ((prelude = p), stream) },
    };
    const stream = { write: (c: string | Uint8Array) => (writes.push(Buffer.from(c).toString('utf8')), true), end: () => undefined };
    return { writes, prelude: () => prelude, run: (h: unknown, event: unknown) => (h as { streamified: (e: unknown, s: unknown, c: Context) => Promise<void> }).streamified(event, stream, context()) };
  }

  const restEvent = (method: string, resource: string, path: string, body: unknown, headers: Record<string, string>): APIGatewayProxyEvent =>
    ({
      resource, path, httpMethod: method, headers, multiValueHeaders: {}, queryStringParameters: null, multiValueQueryStringParameters: null,
      pathParameters: null, stageVariables: null, body: body === undefined ? null : JSON.stringify(body), isBase64Encoded: false,
      requestContext: { accountId: '1', apiId: 'rest', httpMethod: method, identity: { sourceIp: '203.0.113.7', userAgent: 'jest' }, path: `/v1${path}`, protocol: 'HTTP/1.1', requestId: 'r1', requestTimeEpoch: Date.now(), resourceId: 'x', resourcePath: resource, stage: 'v1' },
    }) as unknown as APIGatewayProxyEvent;

  it('writes the completion\'s chunks one write each, after the prelude', async () => {
    const rt = runtime();
    // The entry's streamHandler is streamResponses(handler), made when the module loads: made here,
    // once the awslambda global exists, as the runtime has it before loading the bundle.
    const { streamResponses } = await import('../../shared/http/streaming');
    const handler = streamResponses((await load('openai/chat-completions.ts')).handler as never);
    const path = '/api/v1/openai/v1/chat/completions';
    await rt.run(handler, restEvent('POST', path, path, { model: agentId, messages: [{ role: 'user', content: 'Hello there' }], stream: true }, { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }));
    expect(rt.prelude()).toMatchObject({ statusCode: 200, headers: { 'content-type': expect.stringMatching(/^text\/event-stream/) } });
    const data = rt.writes.filter(Boolean);
    expect(data.length).toBeGreaterThan(3);
    expect(data.at(-1)).toBe('data: [DONE]\n\n');
    expect(data.every((w) => w.startsWith('data: '))).toBe(true);
  });

  it('answers GET /openai/v1/models/{model} on the same URL (an SDK\'s one baseURL)', async () => {
    const rt = runtime();
    const { streamResponses } = await import('../../shared/http/streaming');
    const handler = streamResponses((await load('openai/models-get.ts')).handler as never);
    const event = { ...restEvent('GET', '/api/v1/openai/v1/models/{model}', `/api/v1/openai/v1/models/${agentId}@draft`, undefined, { Authorization: `Bearer ${key}` }), pathParameters: { model: `${agentId}@draft` } };
    await rt.run(handler, event);
    expect(rt.prelude()).toMatchObject({ statusCode: 200 });
    expect(JSON.parse(rt.writes.join(''))).toEqual({ id: `${agentId}@draft`, object: 'model', created: expect.any(Number), owned_by: expect.any(String) });
  });
});

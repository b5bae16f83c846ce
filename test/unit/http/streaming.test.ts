/**
 * Deployed response streaming (shared/http/streaming.ts): the REST API's proxy event (payload 1.0)
 * converted to the payload 2.0 the middleware reads, and `streamHandler` writing through a
 * stand-in of Lambda's response stream that behaves as the Node.js runtime's does
 * (aws-lambda-nodejs-runtime-interface-client, src/HttpResponseStream.js and ResponseStream.js):
 * `HttpResponseStream.from` sets the content type and writes its JSON prelude and eight NUL bytes
 * just before the stream's first write, and not at all when the stream is only ended.
 */
import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { eventStream, TextChannel, streamBodyOf } from '../../../shared/domain/common/stream-body';
import { restEventToV2, streamResponses } from '../../../shared/http/streaming';
import { afterAnswerOf } from '../../../shared/after-answer';

/** A REST API Lambda proxy event as API Gateway sends it (payload 1.0; the stage `v1` is not in `path`). */
function restEvent(over: Partial<APIGatewayProxyEvent> = {}): APIGatewayProxyEvent {
  return {
    resource: '/api/v1/chats/{id}/messages',
    path: '/api/v1/chats/chat_1/messages',
    httpMethod: 'POST',
    headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json', 'X-Api-Key': 'vk_test', Host: 'abc123.execute-api.eu-west-1.amazonaws.com' },
    multiValueHeaders: {
      Accept: ['text/event-stream'],
      'Content-Type': ['application/json'],
      'X-Api-Key': ['vk_test'],
      Host: ['abc123.execute-api.eu-west-1.amazonaws.com'],
    },
    queryStringParameters: { tag: 'b' },
    multiValueQueryStringParameters: { tag: ['a', 'b'], q: ['x y'] },
    pathParameters: { id: 'chat_1' },
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      authorizer: undefined,
      domainName: 'abc123.execute-api.eu-west-1.amazonaws.com',
      domainPrefix: 'abc123',
      extendedRequestId: 'ext-1',
      httpMethod: 'POST',
      identity: {
        accessKey: null, accountId: null, apiKey: null, apiKeyId: null, caller: null, clientCert: null, cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null, cognitoIdentityId: null, cognitoIdentityPoolId: null, principalOrgId: null, sourceIp: '203.0.113.7',
        user: null, userAgent: 'curl/8.5.0', userArn: null,
      },
      path: '/v1/api/v1/chats/chat_1/messages',
      protocol: 'HTTP/1.1',
      requestId: 'req-1',
      requestTime: '26/Nov/2026:02:00:00 +0000',
      requestTimeEpoch: 1_795_658_400_000,
      resourceId: 'res1',
      resourcePath: '/api/v1/chats/{id}/messages',
      stage: 'v1',
    },
    body: '{"content":"Hi"}',
    isBase64Encoded: false,
    ...over,
  };
}

describe('restEventToV2: the REST API proxy event as the HTTP API payload 2.0', () => {
  it('keeps the method, the path without the stage, lower-cased headers, the query, path parameters, the body and the client', () => {
    const v2 = restEventToV2(restEvent());
    expect(v2).toMatchObject({
      version: '2.0',
      routeKey: 'POST /api/v1/chats/{id}/messages',
      rawPath: '/api/v1/chats/chat_1/messages',
      headers: { accept: 'text/event-stream', 'content-type': 'application/json', 'x-api-key': 'vk_test' },
      pathParameters: { id: 'chat_1' },
      body: '{"content":"Hi"}',
      isBase64Encoded: false,
      requestContext: {
        apiId: 'abc123',
        requestId: 'req-1',
        stage: 'v1',
        http: { method: 'POST', path: '/api/v1/chats/chat_1/messages', protocol: 'HTTP/1.1', sourceIp: '203.0.113.7', userAgent: 'curl/8.5.0' },
        timeEpoch: 1_795_658_400_000,
      },
    });
    // Repeated query parameters: every value (payload 2.0 joins them with commas).
    expect(new URLSearchParams(v2.rawQueryString).getAll('tag')).toEqual(['a', 'b']);
    expect(v2.queryStringParameters).toEqual({ tag: 'a,b', q: 'x y' });
  });

  it('joins a header sent twice, and leaves out what the request did not have', () => {
    const v2 = restEventToV2(
      restEvent({
        headers: { 'X-Forwarded-For': '198.51.100.1' },
        multiValueHeaders: { 'X-Forwarded-For': ['198.51.100.1', '203.0.113.7'] },
        queryStringParameters: null,
        multiValueQueryStringParameters: null,
        pathParameters: null,
        body: null,
      }),
    );
    expect(v2.headers).toEqual({ 'x-forwarded-for': '198.51.100.1,203.0.113.7' });
    expect(v2.rawQueryString).toBe('');
    expect(v2).not.toHaveProperty('queryStringParameters');
    expect(v2).not.toHaveProperty('pathParameters');
    expect(v2).not.toHaveProperty('body');
  });
});

/** What the Lambda runtime's response stream received: its content type, and the bytes as written. */
interface FakeResponse {
  contentType?: string;
  writes: Buffer[];
  ended: boolean;
  /** The prelude (status and headers) and the body, parsed from the bytes as API Gateway does. */
  parsed(): { prelude: { statusCode: number; headers: Record<string, string> } | undefined; body: string };
}

/** Lambda's `awslambda` global as the Node.js runtime defines it (see the module comment). */
function installLambdaRuntime(): { invoke(handler: unknown, event: unknown): { done: Promise<void>; response: FakeResponse } } {
  const g = globalThis as { awslambda?: unknown };
  g.awslambda = {
    streamifyResponse: (fn: (event: unknown, stream: unknown, context: Context) => Promise<void>) => ({ streamified: fn }),
    HttpResponseStream: {
      from(stream: { setContentType(type: string): void; _onBeforeFirstWrite?: (write: (chunk: unknown) => void) => void }, prelude: unknown) {
        stream.setContentType('application/vnd.awslambda.http-integration-response');
        const metadata = JSON.stringify(prelude);
        stream._onBeforeFirstWrite = (write) => {
          write(metadata);
          write(new Uint8Array(8));
        };
        return stream;
      },
    },
  };
  return {
    invoke(handler, event) {
      const response: FakeResponse = {
        writes: [],
        ended: false,
        parsed() {
          const all = Buffer.concat(response.writes);
          if (response.contentType !== 'application/vnd.awslambda.http-integration-response') return { prelude: undefined, body: all.toString('utf8') };
          const cut = all.indexOf(Buffer.alloc(8));
          if (cut < 0) return { prelude: undefined, body: all.toString('utf8') };
          return { prelude: JSON.parse(all.subarray(0, cut).toString('utf8')), body: all.subarray(cut + 8).toString('utf8') };
        },
      };
      let firstWrite = true;
      const stream = {
        _onBeforeFirstWrite: undefined as undefined | ((write: (chunk: unknown) => void) => void),
        setContentType(type: string) {
          if (!firstWrite) throw new Error('Cannot set content-type, too late.');
          response.contentType = type;
        },
        write(chunk: string | Uint8Array) {
          if (response.ended) throw new Error('write after end');
          const raw = (c: unknown) => response.writes.push(Buffer.from(c as string | Uint8Array));
          if (firstWrite && typeof stream._onBeforeFirstWrite === 'function') stream._onBeforeFirstWrite(raw);
          firstWrite = false;
          raw(chunk);
          return true;
        },
        end() {
          response.ended = true;
        },
      };
      const { streamified } = handler as { streamified: (event: unknown, stream: unknown, context: Context) => Promise<void> };
      return { done: streamified(event, stream, {} as Context), response };
    },
  };
}

describe('streamResponses: the streaming integration\'s handler', () => {
  let runtime: ReturnType<typeof installLambdaRuntime>;
  beforeEach(() => {
    runtime = installLambdaRuntime();
  });
  afterEach(() => {
    delete (globalThis as { awslambda?: unknown }).awslambda;
  });

  it('is the plain handler outside Lambda (no awslambda global)', () => {
    delete (globalThis as { awslambda?: unknown }).awslambda;
    const handler = () => ({ statusCode: 200 });
    expect(streamResponses(handler)).toBe(handler);
  });

  it('writes each server-sent event as it is produced, after the status and headers', async () => {
    let seen: APIGatewayProxyEventV2 | undefined;
    const channel = new TextChannel();
    const handler = streamResponses(async (event) => {
      seen = event;
      return { statusCode: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'req-1' }, body: streamBodyOf(channel, 'text/event-stream', () => ({ statusCode: 200, body: '{}' })) as never };
    });
    const { done, response } = runtime.invoke(handler, restEvent());
    // The handler is converted and run; the status and headers go out before any event.
    await new Promise((r) => setImmediate(r));
    expect(seen).toMatchObject({ version: '2.0', rawPath: '/api/v1/chats/chat_1/messages', headers: { accept: 'text/event-stream' } });
    expect(response.parsed()).toEqual({ prelude: { statusCode: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'req-1' } }, body: '' });
    channel.push('event: message.delta\ndata: {"delta":"Hel"}\n\n');
    await new Promise((r) => setImmediate(r));
    // The first event is out while the rest is still to come.
    expect(response.parsed().body).toBe('event: message.delta\ndata: {"delta":"Hel"}\n\n');
    expect(response.ended).toBe(false);
    channel.push('event: turn.completed\ndata: {}\n\n');
    channel.end();
    await done;
    expect(response.parsed().body).toBe('event: message.delta\ndata: {"delta":"Hel"}\n\nevent: turn.completed\ndata: {}\n\n');
    expect(response.ended).toBe(true);
  });

  it('streams what eventStream produces, the last event included', async () => {
    const handler = streamResponses(async () => ({
      statusCode: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8' },
      body: (await eventStream(
        async (start, send) => {
          start();
          send('message.delta', { message_id: 'm1', delta: 'Hi' });
          return 'done';
        },
        { completed: (r) => ({ event: 'turn.completed', data: { r } }), successMessage: 'ok' },
      )) as never,
    }));
    const { done, response } = runtime.invoke(handler, restEvent());
    await done;
    expect(response.parsed().body).toBe('event: message.delta\ndata: {"message_id":"m1","delta":"Hi"}\n\nevent: turn.completed\ndata: {"r":"done"}\n\n');
  });

  it('answers a plain envelope whole, with its status and headers (a refusal before the stream)', async () => {
    const envelope = JSON.stringify({ success: false, message: 'busy', error: { code: 'CONFLICT', message: 'busy', details: {} } });
    const handler = streamResponses(async () => ({ statusCode: 409, headers: { 'content-type': 'application/json', 'x-request-id': 'req-1' }, body: envelope }));
    const { done, response } = runtime.invoke(handler, restEvent());
    await done;
    expect(response.parsed()).toEqual({ prelude: { statusCode: 409, headers: { 'content-type': 'application/json', 'x-request-id': 'req-1' } }, body: envelope });
  });

  it('keeps the status and headers of an answer without a body (a CORS preflight), which an end alone would lose', async () => {
    const handler = streamResponses(async () => ({ statusCode: 204, headers: { 'access-control-allow-origin': 'https://shop.example', 'access-control-allow-methods': 'POST, OPTIONS' } }));
    const { done, response } = runtime.invoke(handler, restEvent({ httpMethod: 'OPTIONS', body: null }));
    await done;
    expect(response.parsed()).toEqual({ prelude: { statusCode: 204, headers: { 'access-control-allow-origin': 'https://shop.example', 'access-control-allow-methods': 'POST, OPTIONS' } }, body: '' });
    expect(response.ended).toBe(true);
  });

  it('runs the work a handler left for after its answer once the stream has ended, before the invocation ends', async () => {
    const order: string[] = [];
    let response: FakeResponse | undefined;
    const handler = streamResponses(async (_event, context) => {
      afterAnswerOf(context)!(async () => {
        order.push(`after (stream ended: ${response!.ended})`);
      });
      return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: '{"success":true}' };
    });
    const invoked = runtime.invoke(handler, restEvent());
    response = invoked.response;
    await invoked.done;
    expect(order).toEqual(['after (stream ended: true)']);
    expect(response.parsed().body).toBe('{"success":true}');
  });

  it('offers no work after the answer to a handler invoked otherwise (the buffered HTTP API, a direct invoke)', () => {
    expect(afterAnswerOf({ awsRequestId: 'r' })).toBeUndefined();
  });

  it('decodes a base64 body, and passes a payload 2.0 event through unchanged', async () => {
    let seen: unknown;
    const handler = streamResponses(async (event) => {
      seen = event;
      return { statusCode: 200, headers: { 'content-type': 'application/octet-stream' }, body: Buffer.from('bytes').toString('base64'), isBase64Encoded: true };
    });
    const v2 = restEventToV2(restEvent());
    const { done, response } = runtime.invoke(handler, v2);
    await done;
    expect(seen).toBe(v2);
    expect(response.parsed().body).toBe('bytes');
  });
});

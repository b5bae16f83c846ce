import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from 'aws-lambda';
import { createHttpServer, type ApiHandler, type HttpRoute, type LocalHttpServer } from '../../../shared/local/http-server';
import { afterAnswerOf } from '../../../shared/after-answer';

/** Routes of a made-up API; the real registry is not involved. */
const routes: HttpRoute[] = [
  { method: 'GET', path: '/api/v1/health', operationId: 'getHealth', entry: 'fake/echo.ts' },
  { method: 'GET', path: '/api/v1/health/ready', operationId: 'getReadiness', entry: 'fake/echo.ts' },
  { method: 'GET', path: '/api/v1/agents/{id}', operationId: 'getAgent', entry: 'fake/echo.ts' },
  { method: 'GET', path: '/api/v1/agents/search', operationId: 'searchAgents', entry: 'fake/echo.ts' },
  { method: 'POST', path: '/api/v1/agents', operationId: 'createAgent', entry: 'fake/echo.ts' },
  { method: 'GET', path: '/api/v1/files/{id}', operationId: 'getFile', entry: 'fake/file.ts' },
  { method: 'GET', path: '/api/v1/plain', operationId: 'plain', entry: 'fake/plain.ts' },
  { method: 'GET', path: '/api/v1/broken', operationId: 'broken', entry: 'fake/broken.ts' },
];

interface Seen {
  event: APIGatewayProxyEventV2;
  context: { functionName: string; awsRequestId: string; remainingMs: number };
}

const echo: ApiHandler = (event, context) => ({
  statusCode: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    event,
    context: { functionName: context.functionName, awsRequestId: context.awsRequestId, remainingMs: context.getRemainingTimeInMillis() },
  } satisfies Seen),
});

const handlers: Record<string, ApiHandler> = {
  'fake/echo.ts': echo,
  'fake/fallback.ts': echo,
  'fake/file.ts': () => ({
    statusCode: 201,
    headers: { 'content-type': 'application/octet-stream', 'x-count': 3 as unknown as string },
    cookies: ['a=1; Path=/', 'b=2; HttpOnly'],
    body: Buffer.from([0, 1, 2, 255]).toString('base64'),
    isBase64Encoded: true,
  }),
  'fake/plain.ts': () => ({ hello: 'world' }) as unknown as APIGatewayProxyResultV2,
  'fake/broken.ts': () => {
    throw new Error('secret detail at line 42');
  },
};

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  raw: Buffer;
  json: any;
}

/** One HTTP request with full control over headers (an array keeps repeated names). */
function send(port: number, options: { method?: string; path: string; headers?: string[] | Record<string, string>; body?: Buffer | string }): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path, headers: options.headers as never }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        let json: unknown;
        try {
          json = JSON.parse(raw.toString('utf8'));
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, json });
      });
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

let server: LocalHttpServer;
let port: number;
let logs: string[];

beforeAll(async () => {
  logs = [];
  server = createHttpServer({
    routes,
    fallbackEntry: 'fake/fallback.ts',
    maxBodyBytes: 1024,
    log: (line) => logs.push(line),
    loadHandler: async <H>(entry: string) => {
      return handlers[entry] as H;
    },
  });
  port = await server.listen(0);
});

afterAll(() => server.close());

const seen = (reply: Reply) => reply.json as Seen;

describe('route matching', () => {
  it('serves a path with and without a trailing slash from the same operation', async () => {
    // Act
    const plain = await send(port, { path: '/api/v1/health' });
    const slashed = await send(port, { path: '/api/v1/health/' });
    // Assess
    expect(seen(plain).event.routeKey).toBe('GET /api/v1/health');
    expect(seen(slashed).event.routeKey).toBe('GET /api/v1/health');
    expect(seen(slashed).event.rawPath).toBe('/api/v1/health/');
  });

  it('tells a longer path from its prefix: /health/ready is not /health', async () => {
    // Act
    const ready = await send(port, { path: '/api/v1/health/ready' });
    // Assess
    expect(seen(ready).event.routeKey).toBe('GET /api/v1/health/ready');
    expect(seen(ready).context.functionName).toBe('getReadiness');
  });

  it('prefers a literal segment to a parameter, and extracts decoded parameters', async () => {
    // Act
    const search = await send(port, { path: '/api/v1/agents/search' });
    const byId = await send(port, { path: '/api/v1/agents/a%20b' });
    // Assess
    expect(seen(search).event.routeKey).toBe('GET /api/v1/agents/search');
    expect(seen(search).event.pathParameters).toBeUndefined();
    expect(seen(byId).event.routeKey).toBe('GET /api/v1/agents/{id}');
    expect(seen(byId).event.pathParameters).toEqual({ id: 'a b' });
  });

  it('hands unknown paths and wrong methods to the fallback handler', async () => {
    // Act
    const unknown = await send(port, { path: '/api/v1/nothing-here' });
    const wrongMethod = await send(port, { method: 'DELETE', path: '/api/v1/health' });
    // Assess
    expect(seen(unknown).event.routeKey).toBe('$default');
    expect(seen(unknown).context.functionName).toBe('fallback');
    expect(seen(wrongMethod).event.routeKey).toBe('$default');
    expect(seen(wrongMethod).event.requestContext.http.method).toBe('DELETE');
  });
});

describe('the API Gateway v2 event', () => {
  it('carries the request as API Gateway would build it', async () => {
    // Act
    const reply = await send(port, {
      method: 'POST',
      path: '/api/v1/agents?tag=a&tag=b&q=hello%20world',
      headers: ['Host', `127.0.0.1:${port}`, 'Content-Type', 'application/json', 'X-Multi', 'one', 'X-Multi', 'two', 'Cookie', 'session=abc; theme=dark', 'User-Agent', 'unit-test/1.0'],
      body: '{"name":"Ada"}',
    });
    // Assess
    const { event, context } = seen(reply);
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'POST /api/v1/agents',
      rawPath: '/api/v1/agents',
      rawQueryString: 'tag=a&tag=b&q=hello%20world',
      queryStringParameters: { tag: 'a,b', q: 'hello world' },
      cookies: ['session=abc', 'theme=dark'],
      body: '{"name":"Ada"}',
      isBase64Encoded: false,
      requestContext: {
        routeKey: 'POST /api/v1/agents',
        stage: '$default',
        domainName: `127.0.0.1:${port}`,
        http: { method: 'POST', path: '/api/v1/agents', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'unit-test/1.0' },
      },
    });
    expect(event.headers).toMatchObject({ 'content-type': 'application/json', 'x-multi': 'one,two', 'user-agent': 'unit-test/1.0' });
    expect(event.headers.cookie).toBeUndefined();
    expect(Object.keys(event.headers).every((name) => name === name.toLowerCase())).toBe(true);
    expect(event.requestContext.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(event.requestContext.time).toMatch(/^\d{2}\/[A-Z][a-z]{2}\/\d{4}:\d{2}:\d{2}:\d{2} \+0000$/);
    expect(event.requestContext.timeEpoch).toEqual(expect.any(Number));
    expect(context.functionName).toBe('createAgent');
    expect(context.awsRequestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(context.remainingMs).toBeGreaterThan(0);
    expect(reply.headers['apigw-requestid']).toBe(event.requestContext.requestId);
  });

  it('leaves out query, path parameters and body when there are none', async () => {
    // Act
    const { event } = seen(await send(port, { path: '/api/v1/health' }));
    // Assess
    expect(event.rawQueryString).toBe('');
    expect(event).not.toHaveProperty('queryStringParameters');
    expect(event).not.toHaveProperty('pathParameters');
    expect(event).not.toHaveProperty('body');
    expect(event).not.toHaveProperty('cookies');
    expect(event.isBase64Encoded).toBe(false);
  });

  it('base64-encodes a body that is not text', async () => {
    // Prepare
    const bytes = Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x00]);
    // Act
    const { event } = seen(await send(port, { method: 'POST', path: '/api/v1/agents', headers: { 'content-type': 'audio/wav' }, body: bytes }));
    // Assess
    expect(event.isBase64Encoded).toBe(true);
    expect(Buffer.from(event.body!, 'base64')).toEqual(bytes);
  });
});

describe('writing the result', () => {
  it('writes status, headers, cookies and a base64 body as bytes', async () => {
    // Act
    const reply = await send(port, { path: '/api/v1/files/x' });
    // Assess
    expect(reply.status).toBe(201);
    expect(reply.headers['content-type']).toBe('application/octet-stream');
    expect(reply.headers['x-count']).toBe('3');
    expect(reply.headers['set-cookie']).toEqual(['a=1; Path=/', 'b=2; HttpOnly']);
    expect(reply.raw).toEqual(Buffer.from([0, 1, 2, 255]));
  });

  it('turns a result without statusCode into a 200 JSON body', async () => {
    // Act
    const reply = await send(port, { path: '/api/v1/plain' });
    // Assess
    expect(reply.status).toBe(200);
    expect(reply.headers['content-type']).toBe('application/json');
    expect(reply.json).toEqual({ hello: 'world' });
  });

  it('answers a throwing handler with a 500 INTERNAL envelope and no detail', async () => {
    // Act
    const reply = await send(port, { path: '/api/v1/broken' });
    // Assess
    expect(reply.status).toBe(500);
    expect(reply.json).toMatchObject({ success: false, error: { code: 'INTERNAL', message: 'Internal server error' } });
    expect(reply.raw.toString()).not.toContain('secret detail');
    expect(reply.headers['x-request-id']).toEqual(expect.any(String));
    expect(logs.some((l) => l.includes('secret detail'))).toBe(true);
  });

  it('refuses a body over the limit with a 413 PAYLOAD_TOO_LARGE envelope', async () => {
    // Act
    const reply = await send(port, { method: 'POST', path: '/api/v1/agents', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(1025) });
    const next = await send(port, { path: '/api/v1/health' });
    // Assess
    expect(reply.status).toBe(413);
    expect(reply.json).toMatchObject({ success: false, message: expect.any(String), error: { code: 'PAYLOAD_TOO_LARGE', details: {} } });
    expect(next.status).toBe(200);
  });

});

describe('work after the answer (shared/after-answer.ts)', () => {
  it('answers first, then runs what the function left for after its answer; closing waits for it', async () => {
    const done: string[] = [];
    const later = createHttpServer({
      routes: [{ method: 'POST', path: '/api/v1/later', operationId: 'later', entry: 'fake/later.ts' }],
      loadHandler: async <H>() =>
        (async (_event: APIGatewayProxyEventV2, context: object) => {
          afterAnswerOf(context)!(async () => {
            await new Promise((r) => setTimeout(r, 200));
            done.push('stored');
          });
          return { statusCode: 200, body: '{}' };
        }) as unknown as H,
    });
    const laterPort = await later.listen(0);
    // Act
    const reply = await send(laterPort, { method: 'POST', path: '/api/v1/later' });
    const answeredBefore = [...done];
    await later.close();
    // Assess
    expect(reply.status).toBe(200);
    expect(answeredBefore).toEqual([]);
    expect(done).toEqual(['stored']);
  });
});

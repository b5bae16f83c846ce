/**
 * The issue-34 "done when", as far as it can run without AWS: the official `openai` SDK pointed at
 * the one documented base URL (`StreamingApiUrl` + `/api/v1/openai/v1`) lists, retrieves, completes,
 * streams, uses tools and pins a version. The server here answers exactly the REST API methods of
 * the synthesized stack (anything else is API Gateway's 403 "Missing Authentication Token", which
 * an SDK met before for GET /models), each through its function's `streamHandler` under Lambda's
 * response-streaming contract (a payload 1.0 event in; the prelude, then the body's writes out,
 * each sent as written), against DynamoDB Local and the local model.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import type { Context } from 'aws-lambda';
import { createOrganizationWithKey } from '../../shared/domain/api-keys/provision';
import { operations } from '../../shared/http/registry';
import { compileRoutes, matchRoute } from '../../shared/http/route-match';
import { synth } from '../infra/synth';

const STAGE = 'v1';
let server: Server;
let base = '';
let key = '';

/** `METHOD /path` of every REST API method of the synthesized stack, with its integration. */
function restMethods(): { method: string; path: string; integration: Record<string, unknown> }[] {
  const s = synth();
  const resources = s.resources('AWS::ApiGateway::Resource');
  const pathOf = (ref: unknown): string => {
    const id = (ref as { Ref?: string })?.Ref;
    const resource = id ? resources.find((r) => r.logicalId === id) : undefined;
    return resource ? `${pathOf(resource.Properties.ParentId)}/${resource.Properties.PathPart}` : '';
  };
  return s.resources('AWS::ApiGateway::Method').map((m) => ({ method: m.Properties.HttpMethod, path: pathOf(m.Properties.ResourceId), integration: m.Properties.Integration }));
}

/** Lambda's `awslambda` global, as the Node.js runtime defines it: each write goes out at once. */
function installRuntime() {
  (globalThis as { awslambda?: unknown }).awslambda = {
    streamifyResponse: (fn: unknown) => ({ streamified: fn }),
    HttpResponseStream: {
      from: (stream: { prelude(p: unknown): void }, prelude: unknown) => {
        stream.prelude(prelude);
        return stream;
      },
    },
  };
}

const readBody = (req: IncomingMessage) => new Promise<string>((resolve) => {
  let text = '';
  req.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve(text));
});

beforeAll(async () => {
  ({ key } = await createOrganizationWithKey({ name: 'sdk on the streaming api' }));
  const methods = restMethods();
  installRuntime();
  const { streamResponses } = await import('../../shared/http/streaming');
  const routes = compileRoutes(methods.map((m) => ({ ...m, op: operations.find((o) => o.method === m.method && o.path === m.path) })));
  server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    // The stage is the first path segment of the REST API's URL; the function sees the path without it.
    const path = url.pathname.replace(new RegExp(`^/${STAGE}`), '');
    const match = matchRoute(routes, req.method ?? 'GET', path);
    if (match.kind !== 'match' || !match.route.op) {
      res.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': 'MissingAuthenticationTokenException' }).end('{"message":"Missing Authentication Token"}');
      return;
    }
    const route = match.route;
    expect(route.integration).toMatchObject({ Type: 'AWS_PROXY', ResponseTransferMode: 'STREAM' });
    const { handler } = (await import(`../../${route.op!.entry}`)) as { handler: never };
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value;
    const query = Object.fromEntries([...url.searchParams].map(([k]) => [k, url.searchParams.getAll(k)]));
    const body = await readBody(req);
    const event = {
      resource: route.path, path, httpMethod: req.method, headers, multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      queryStringParameters: null, multiValueQueryStringParameters: Object.keys(query).length ? query : null,
      pathParameters: Object.keys(match.params).length ? match.params : null, stageVariables: null, body: body || null, isBase64Encoded: false,
      requestContext: { accountId: '1', apiId: 'rest', httpMethod: req.method, identity: { sourceIp: '127.0.0.1', userAgent: headers['user-agent'] ?? '' }, path: url.pathname, protocol: 'HTTP/1.1', requestId: `r-${Date.now()}`, requestTimeEpoch: Date.now(), resourceId: 'x', resourcePath: route.path, stage: STAGE },
    };
    const stream = {
      prelude: (p: { statusCode: number; headers: Record<string, string> }) => res.writeHead(p.statusCode, p.headers),
      write: (chunk: string | Uint8Array) => (chunk.length ? res.write(chunk) : true),
      end: () => res.end(),
    };
    await (streamResponses(handler) as { streamified: (e: unknown, s: unknown, c: Context) => Promise<void> }).streamified(event, stream, { awsRequestId: 'x', getRemainingTimeInMillis: () => 29_000 } as unknown as Context);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/${STAGE}`;
}, 60_000);

afterAll(async () => {
  delete (globalThis as { awslambda?: unknown }).awslambda;
  await new Promise<void>((r) => server?.close(() => r()));
});

it('the SDK on StreamingApiUrl + /api/v1/openai/v1: lists, retrieves, completes, streams, uses tools and pins a version', async () => {
  const plain = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as any };
  };
  // A platform route the REST API does not have is API Gateway's 403: the documented base is for streams and /openai/v1.
  expect((await plain('GET', '/api/v1/agents')).status).toBe(403);

  // The agent is made on the HTTP API (ApiUrl); its function is called directly here.
  const { handler: createAgent } = (await import('../../functions/agents/create')) as { handler: (e: unknown, c: unknown) => Promise<{ body: string }> };
  const { apiEvent, lambdaContext } = await import('../support/events');
  const made = await createAgent(apiEvent({ method: 'POST', path: '/api/v1/agents', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: { name: 'SDK', prompt: 'Be brief.', begin_message: '' } }), lambdaContext);
  const agentId = JSON.parse(made.body).data.id as string;
  const { handler: publish } = (await import('../../functions/agents/versions-create')) as { handler: (e: unknown, c: unknown) => Promise<{ statusCode: number }> };
  expect((await publish(apiEvent({ method: 'POST', path: `/api/v1/agents/${agentId}/versions`, pathParameters: { id: agentId }, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: {} }), lambdaContext)).statusCode).toBe(200);

  const client = new OpenAI({ apiKey: key, baseURL: `${base}/api/v1/openai/v1`, maxRetries: 0 });
  const listed: string[] = [];
  for await (const m of client.models.list()) listed.push(m.id);
  expect(listed).toEqual(expect.arrayContaining([agentId, `${agentId}@draft`, `${agentId}@1`]));
  expect(await client.models.retrieve(`${agentId}@1`)).toMatchObject({ id: `${agentId}@1`, object: 'model' });

  const completion = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'Hello' }] });
  expect(completion).toMatchObject({ object: 'chat.completion', model: `${agentId}@1`, choices: [{ finish_reason: 'stop' }] });

  const stream = await client.chat.completions.create({ model: `${agentId}@draft`, messages: [{ role: 'user', content: 'Hello again' }], stream: true, stream_options: { include_usage: true } });
  let chunks = 0;
  let usage: unknown;
  for await (const chunk of stream) {
    chunks++;
    expect(chunk.model).toBe(`${agentId}@draft`);
    if (chunk.usage) usage = chunk.usage;
  }
  expect(chunks).toBeGreaterThan(2);
  expect(usage).toMatchObject({ total_tokens: expect.any(Number) });

  // The local model calls a tool whose name the user's message holds.
  const tools = [{ type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } }];
  const called = await client.chat.completions.create({ model: agentId, messages: [{ role: 'user', content: 'get_time please' }], tools });
  expect(called.choices[0]).toMatchObject({ finish_reason: 'tool_calls', message: { tool_calls: [{ type: 'function', function: { name: 'get_time' } }] } });

  const missing = await client.models.retrieve(`${agentId}@7`).catch((e: unknown) => e);
  expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
}, 60_000);

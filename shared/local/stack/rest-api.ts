import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { compileRoutes, matchRoute } from '../../http/route-match';
import type { LambdaService } from './functions';
import type { ResolvedAssembly, Resource } from './template';

/**
 * The template's REST API (AWS::ApiGateway::RestApi, its Resources and Methods) served as API
 * Gateway serves it: `/<stage>/<path>` matched against the resource tree, a REST (payload 1.0)
 * proxy event, and the integration's function invoked with response streaming when the method's
 * `ResponseTransferMode` is STREAM (status and headers from the prelude, then each chunk as
 * written). The integration's `TimeoutInMillis` bounds the wait for the response to start (504
 * "Endpoint request timed out"); a function error before any byte is a 502.
 */

export interface RestMethod {
  method: string;
  /** The resource path, `{param}` segments as in the template. */
  path: string;
  functionArn: string;
  streaming: boolean;
  timeoutMs: number;
}

/** The REST API's methods, with their paths from the resource tree and their functions from the integration URIs. */
export function restMethods(assembly: ResolvedAssembly, api: Resource): RestMethod[] {
  const resources = assembly.ofType('AWS::ApiGateway::Resource').filter((r) => r.props.RestApiId === api.ref);
  const byId = new Map(resources.map((r) => [r.ref, r]));
  const pathOf = (id: string): string => {
    if (id === api.attrs.RootResourceId) return '';
    const r = byId.get(id);
    if (!r) throw new Error(`REST API ${api.logicalId}: resource ${id} is not in the template`);
    return `${pathOf(String(r.props.ParentId))}/${r.props.PathPart}`;
  };
  return assembly
    .ofType('AWS::ApiGateway::Method')
    .filter((m) => m.props.RestApiId === api.ref)
    .map((m) => {
      const integration = m.props.Integration ?? {};
      const uri = String(integration.Uri ?? '');
      const fn = /\/functions\/(arn:[^/]+)\/(response-streaming-)?invocations$/.exec(uri);
      if (integration.Type !== 'AWS_PROXY' || !fn) throw new Error(`REST API method ${m.logicalId}: only Lambda proxy integrations run locally (got ${integration.Type} ${uri})`);
      return {
        method: String(m.props.HttpMethod),
        path: pathOf(String(m.props.ResourceId)) || '/',
        functionArn: fn[1]!,
        streaming: integration.ResponseTransferMode === 'STREAM' || !!fn[2],
        timeoutMs: Number(integration.TimeoutInMillis ?? 29_000),
      };
    });
}

export interface LocalRestApi {
  server: Server;
  port: number;
  close(): Promise<void>;
}

export async function startRestApi(options: { methods: RestMethod[]; stage: string; apiId: string; accountId: string; lambda: LambdaService; log: (line: string) => void }): Promise<LocalRestApi> {
  const routes = compileRoutes(options.methods);
  const json = (res: ServerResponse, status: number, body: unknown, requestId: string) => {
    if (res.headersSent) return void res.destroy();
    res.writeHead(status, { 'content-type': 'application/json', 'x-amzn-requestid': requestId, 'x-amzn-errortype': status === 403 ? 'MissingAuthenticationTokenException' : '' });
    res.end(JSON.stringify(body));
  };
  const serve = async (req: IncomingMessage, res: ServerResponse) => {
    const requestId = randomUUID();
    const url = new URL(req.url ?? '/', 'http://local');
    const prefix = `/${options.stage}`;
    // API Gateway answers a path outside any resource (or the wrong stage) 403 Missing Authentication Token.
    if (url.pathname !== prefix && !url.pathname.startsWith(`${prefix}/`)) return json(res, 403, { message: 'Missing Authentication Token' }, requestId);
    const path = url.pathname.slice(prefix.length) || '/';
    const method = (req.method ?? 'GET').toUpperCase();
    const match = matchRoute(routes, method, path);
    if (match.kind !== 'match') return json(res, 403, { message: 'Missing Authentication Token' }, requestId);
    const route = match.route;
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const headers: Record<string, string> = {};
    const multiValueHeaders: Record<string, string[]> = {};
    for (let i = 0; i < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      const value = req.rawHeaders[i + 1]!;
      headers[name] = value;
      (multiValueHeaders[name] ??= []).push(value);
    }
    const query: Record<string, string> = {};
    const multiQuery: Record<string, string[]> = {};
    for (const [k, v] of url.searchParams) {
      query[k] = v;
      (multiQuery[k] ??= []).push(v);
    }
    const now = Date.now();
    const event = {
      resource: route.path,
      path,
      httpMethod: method,
      headers,
      multiValueHeaders,
      queryStringParameters: Object.keys(query).length ? query : null,
      multiValueQueryStringParameters: Object.keys(multiQuery).length ? multiQuery : null,
      pathParameters: Object.keys(match.params).length ? match.params : null,
      stageVariables: null,
      requestContext: {
        accountId: options.accountId,
        apiId: options.apiId,
        resourceId: route.path,
        resourcePath: route.path,
        httpMethod: method,
        stage: options.stage,
        requestId,
        extendedRequestId: requestId,
        requestTime: new Date(now).toUTCString(),
        requestTimeEpoch: now,
        path: url.pathname,
        protocol: `HTTP/${req.httpVersion}`,
        domainName: req.headers.host ?? 'localhost',
        identity: { sourceIp: req.socket.remoteAddress?.replace(/^::ffff:/, '') ?? '127.0.0.1', userAgent: req.headers['user-agent'] ?? null },
      },
      body: body.length ? body.toString('utf8') : null,
      isBase64Encoded: false,
    };
    let started = false;
    const timer = setTimeout(() => {
      if (!started) json(res, 504, { message: 'Endpoint request timed out' }, requestId);
    }, route.timeoutMs);
    try {
      if (route.streaming) {
        await options.lambda.invoke(route.functionArn, event, {
          prelude(prelude) {
            if (res.headersSent) return;
            started = true;
            res.writeHead(prelude.statusCode ?? 200, { ...prelude.headers, 'x-amzn-requestid': requestId });
          },
          chunk(data) {
            if (!started) {
              started = true;
              res.writeHead(200, { 'content-type': 'application/octet-stream', 'x-amzn-requestid': requestId });
            }
            res.write(data);
          },
          end() {
            // As Lambda: the client's response ends with the stream, not with the invocation.
            if (!started) {
              started = true;
              res.writeHead(200, { 'x-amzn-requestid': requestId });
            }
            res.end();
          },
        });
        if (!started) res.writeHead(200, { 'x-amzn-requestid': requestId });
        if (!res.writableEnded) res.end();
      } else {
        const result = (await options.lambda.invoke(route.functionArn, event)) as { statusCode?: number; headers?: Record<string, string>; body?: string; isBase64Encoded?: boolean } | null;
        started = true;
        const out = result?.isBase64Encoded ? Buffer.from(result.body ?? '', 'base64') : Buffer.from(result?.body ?? '');
        res.writeHead(result?.statusCode ?? 200, { ...result?.headers, 'x-amzn-requestid': requestId });
        res.end(out);
      }
    } catch (err) {
      options.log(`REST ${method} ${path} failed [${requestId}]: ${(err as Error).name}: ${(err as Error).message}`);
      // A failure after the stream ended reaches no client: it had its whole response.
      if (started) {
        if (!res.writableEnded) res.destroy();
      } else json(res, 502, { message: 'Internal server error' }, requestId);
    } finally {
      clearTimeout(timer);
    }
  };
  const server = createServer({ keepAlive: true }, (req, res) => {
    serve(req, res).catch((err: unknown) => {
      options.log(`REST API error: ${(err as Error).message}`);
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    server,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

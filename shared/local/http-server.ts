import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { runAs } from '../access/enforce';
import type { Access } from '../http/operation';
import { operations, fallbackEntry as registeredFallbackEntry } from '../http/registry';
import { compileRoutes, matchRoute } from '../http/route-match';
import { errorBody } from '../http/envelope';
import type { ErrorCode } from '../errors';
import { createHandlerLoader, type HandlerLoader } from './handler-loader';
import { createLambdaContext } from './lambda-context';
import { isStreamBody, streamingInvocation, type StreamBody } from '../domain/common/stream-body';
import { answersFirst, runAfterAnswer } from '../after-answer';

/** What the server needs of an operation (the route registry's `Operation` has all of it). */
export interface HttpRoute {
  method: string;
  path: string;
  operationId: string;
  entry: string;
  timeoutSeconds?: number;
  memoryMb?: number;
  /** What the function may touch; each request runs inside these grants as in AWS. Absent: unchecked (test fixtures). */
  access?: Access;
}

/** An API Gateway HTTP API (payload 2.0) Lambda handler, as every entry file exports it. */
export type ApiHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyResultV2> | APIGatewayProxyResultV2;

export interface HttpServerOptions {
  /** Default: the operations of `shared/http/registry.ts`. */
  routes?: HttpRoute[];
  /** Entry answering what no route matches. Default: the registry's fallback entry. */
  fallbackEntry?: string;
  /** Default: imports each entry file once, on its first request. */
  loadHandler?: HandlerLoader;
  /** Largest request body passed to a handler (default 6 MiB, Lambda's payload limit). */
  maxBodyBytes?: number;
  log?: (line: string) => void;
  /**
   * Pages of the local runtime only (the widget demo, the favicon), by exact path, answered to GET
   * and HEAD outside the registry: a string is HTML; otherwise its own content type.
   */
  pages?: Map<string, () => string | LocalPage>;
}

/** A local page that is not HTML (the favicon). */
export interface LocalPage {
  contentType: string;
  body: string;
  /** Default `no-store`. */
  cacheControl?: string;
}

export interface LocalHttpServer {
  readonly server: Server;
  /** Listens (port 0: any free port) and resolves with the actual port. */
  listen(port?: number, host?: string): Promise<number>;
  /** Stops accepting, closes idle keep-alive connections, waits for requests in flight. */
  close(): Promise<void>;
}

const MiB = 1024 * 1024;
/** Lambda's synchronous payload limit: larger requests and responses fail in AWS too. */
export const LAMBDA_PAYLOAD_LIMIT = 6 * MiB;
/** API Gateway's hard limit: beyond it the upload is not even read. */
const GATEWAY_PAYLOAD_LIMIT = 10 * MiB;
/** API Gateway's integration timeout caps every function's. */
const GATEWAY_TIMEOUT_SECONDS = 30;

/**
 * A node:http server that serves the route registry's handlers as API Gateway would: it
 * matches the route (the same matcher the fallback uses), builds an HTTP API v2 event and a
 * Lambda context, calls the entry file's `handler` and writes its result back.
 */
export function createHttpServer(options: HttpServerOptions = {}): LocalHttpServer {
  const routes = compileRoutes(options.routes ?? operations);
  const fallback = options.fallbackEntry ?? registeredFallbackEntry;
  const loadHandler = options.loadHandler ?? createHandlerLoader();
  const maxBodyBytes = options.maxBodyBytes ?? LAMBDA_PAYLOAD_LIMIT;
  const log = options.log ?? (() => undefined);
  /** Work after answers still running (shared/after-answer.ts): `close` waits for it. */
  const afterAnswers = new Set<Promise<void>>();

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const requestId = randomUUID();
    const [rawPath = '/', rawQueryString = ''] = splitUrl(req.url ?? '/');
    const method = (req.method ?? 'GET').toUpperCase();
    const body = await readBody(req, maxBodyBytes);
    if (body === 'too-large' || body === 'far-too-large') {
      const message = `Request body exceeds ${maxBodyBytes} bytes`;
      const err = { code: 'PAYLOAD_TOO_LARGE' as const, message, details: {} };
      writeError(res, 413, err, echoRequestId(req, requestId), body === 'far-too-large');
      if (body === 'far-too-large') res.once('finish', () => req.destroy());
      return;
    }
    const page = method === 'GET' || method === 'HEAD' ? options.pages?.get(rawPath.replace(/(.)\/$/, '$1')) : undefined;
    if (page) {
      const made = page();
      const { contentType, body: content, cacheControl } = typeof made === 'string' ? { contentType: 'text/html; charset=utf-8', body: made, cacheControl: undefined } : made;
      res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(content), 'cache-control': cacheControl ?? 'no-store' });
      res.end(method === 'HEAD' ? undefined : content);
      return;
    }
    const match = matchRoute(routes, method, rawPath);
    const route = match.kind === 'match' ? match.route : undefined;
    const event = toApiGatewayEvent({
      req,
      method,
      rawPath,
      rawQueryString,
      body,
      requestId,
      routeKey: route ? `${route.method} ${route.path}` : '$default',
      pathParameters: match.kind === 'match' && Object.keys(match.params).length ? match.params : undefined,
    });
    const functionName = route?.operationId ?? 'fallback';
    try {
      const handler = await loadHandler<ApiHandler>(route?.entry ?? fallback);
      // The local server writes a stream as it is produced (writeStream), as the streaming REST API does.
      const context = answersFirst(streamingInvocation(createLambdaContext({
        functionName,
        timeoutMs: Math.min(route?.timeoutSeconds ?? GATEWAY_TIMEOUT_SECONDS, GATEWAY_TIMEOUT_SECONDS) * 1000,
        memoryMb: route?.memoryMb,
      })));
      // The fallback function is granted nothing; a route runs with its operation's access.
      const access = route ? route.access : {};
      const result = access ? await runAs({ name: functionName, access }, () => handler(event, context)) : await handler(event, context);
      const streamed = typeof result === 'object' && result !== null ? (result as { body?: unknown }).body : undefined;
      if (isStreamBody(streamed)) await writeStream(res, result as StructuredResult, streamed, requestId);
      else writeResult(res, result, requestId);
      // The answer is out: what the function left for after it runs now, inside the same grants
      // (and the server's close waits for it, as Lambda keeps the invocation until it is done).
      const after = access ? runAs({ name: functionName, access }, () => runAfterAnswer(context)) : runAfterAnswer(context);
      afterAnswers.add(after);
      await after.finally(() => afterAnswers.delete(after));
    } catch (err) {
      log(`${method} ${rawPath} (${functionName}) failed [${requestId}]: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const internal = { code: 'INTERNAL' as const, message: 'Internal server error', details: { request_id: requestId } };
      writeError(res, 500, internal, echoRequestId(req, requestId), false);
    }
  };

  const server = createServer({ keepAlive: true }, (req, res) => {
    serve(req, res).catch((err: unknown) => {
      log(`local HTTP server error: ${err instanceof Error ? err.message : String(err)}`);
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });

  return {
    server,
    listen(port = 0, host = '127.0.0.1') {
      return new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.removeListener('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    async close() {
      await new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await Promise.allSettled([...afterAnswers]);
    },
  };
}

function splitUrl(url: string): [string, string] {
  // An absolute-form target (a proxy's) keeps only its path.
  const target = /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i, '') || '/' : url;
  const noFragment = target.split('#')[0]!;
  const q = noFragment.indexOf('?');
  return q < 0 ? [noFragment, ''] : [noFragment.slice(0, q), noFragment.slice(q + 1)];
}

type ReadResult = Buffer | 'too-large' | 'far-too-large';

/**
 * Reads the body up to `limit`. Past it the rest is read and dropped so the client gets its
 * 413 on a healthy connection; past API Gateway's 10 MiB the connection is closed instead.
 */
function readBody(req: IncomingMessage, limit: number): Promise<ReadResult> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > Math.max(limit, GATEWAY_PAYLOAD_LIMIT)) {
    req.pause();
    return Promise.resolve('far-too-large');
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const finish = (result: ReadResult) => {
      if (settled) return;
      settled = true;
      resolve(result);
    };
    req.on('data', (chunk: Buffer) => {
      total += chunk.length;
      if (total > Math.max(limit, GATEWAY_PAYLOAD_LIMIT)) {
        req.pause();
        finish('far-too-large');
      } else if (total <= limit) chunks.push(chunk);
    });
    req.once('end', () => finish(total > limit ? 'too-large' : Buffer.concat(chunks, total)));
    req.once('error', (err) => {
      if (!settled) {
        settled = true;
        reject(err);
      }
    });
  });
}

export interface EventInput {
  req: IncomingMessage;
  method: string;
  rawPath: string;
  rawQueryString: string;
  body: Buffer;
  requestId: string;
  routeKey: string;
  pathParameters?: Record<string, string>;
  now?: number;
}

/** Builds the API Gateway HTTP API payload 2.0 event for a request. */
export function toApiGatewayEvent(input: EventInput): APIGatewayProxyEventV2 {
  const { req, method, rawPath, rawQueryString, body, requestId, routeKey, pathParameters } = input;
  const now = input.now ?? Date.now();
  const headers: Record<string, string> = {};
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    if (name === 'cookie') continue;
    headers[name] = name in headers ? `${headers[name]},${raw[i + 1]}` : raw[i + 1]!;
  }
  const sourceIp = (req.socket.remoteAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  // Headers API Gateway adds on its way to the function.
  headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${headers['x-forwarded-for']}, ${sourceIp}` : sourceIp;
  headers['x-forwarded-proto'] ??= 'http';
  headers['x-forwarded-port'] ??= String(req.socket.localPort ?? '');
  headers['x-amzn-trace-id'] ??= `Root=1-${Math.floor(now / 1000).toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)}`;
  const cookies = cookiesOf(req);
  const query = queryParameters(rawQueryString);
  const domainName = headers.host ?? 'localhost';
  const textual = isTextContentType(headers['content-type']);
  return {
    version: '2.0',
    routeKey,
    rawPath,
    rawQueryString,
    ...(cookies.length ? { cookies } : {}),
    headers,
    ...(query ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName,
      domainPrefix: domainName.split('.')[0]!.split(':')[0]!,
      http: {
        method,
        path: rawPath,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp,
        userAgent: headers['user-agent'] ?? '',
      },
      requestId,
      routeKey,
      stage: '$default',
      time: gatewayTime(now),
      timeEpoch: now,
    },
    ...(pathParameters ? { pathParameters } : {}),
    ...(body.length ? { body: textual ? body.toString('utf8') : body.toString('base64') } : {}),
    isBase64Encoded: body.length > 0 && !textual,
  };
}

function cookiesOf(req: IncomingMessage): string[] {
  const cookies: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    if (raw[i]!.toLowerCase() !== 'cookie') continue;
    cookies.push(...raw[i + 1]!.split(';').map((c) => c.trim()).filter(Boolean));
  }
  return cookies;
}

/** Decoded query parameters, repeated names joined with commas (as API Gateway does). */
function queryParameters(rawQueryString: string): Record<string, string> | undefined {
  if (!rawQueryString) return undefined;
  const result: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(rawQueryString)) {
    result[name] = name in result ? `${result[name]},${value}` : value;
  }
  return Object.keys(result).length ? result : undefined;
}

/**
 * Bodies API Gateway passes as text; any other content type (or none) arrives base64-encoded
 * with `isBase64Encoded`, so handlers must decode either way, locally as in AWS.
 */
export function isTextContentType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    /^application\/(json|xml|javascript|x-www-form-urlencoded|graphql|yaml|x-yaml|x-ndjson)$/.test(type) ||
    /\+(json|xml)$/.test(type)
  );
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** `12/Mar/2020:19:03:58 +0000`, API Gateway's requestContext.time format. */
function gatewayTime(epochMs: number): string {
  const d = new Date(epochMs);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} +0000`;
}

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;
/** The request id the middleware would use: the caller's when safe to echo, else the gateway's. */
function echoRequestId(req: IncomingMessage, requestId: string): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && SAFE_ID.test(given) ? given : requestId;
}

function writeError(
  res: ServerResponse,
  statusCode: number,
  error: { code: ErrorCode; message: string; details: Record<string, unknown> },
  requestId: string,
  closeConnection: boolean,
): void {
  const body = JSON.stringify(errorBody(error));
  res.writeHead(statusCode, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-request-id': requestId,
    'apigw-requestid': requestId,
    ...(closeConnection ? { connection: 'close' } : {}),
  });
  res.end(body);
}

/**
 * Writes a streamed answer (server-sent events) as Lambda response streaming does: status and
 * headers at once, then each chunk the moment it is produced (no buffering, no content-length),
 * ending when the stream does. A client that goes away stops the writing, not the turn.
 */
async function writeStream(res: ServerResponse, result: StructuredResult, body: StreamBody, requestId: string): Promise<void> {
  res.setHeader('apigw-requestid', requestId);
  for (const [name, value] of Object.entries(result.headers ?? {})) res.setHeader(name, String(value));
  res.writeHead(result.statusCode ?? 200);
  res.flushHeaders();
  for await (const chunk of body.chunks) {
    if (res.destroyed) continue;
    res.write(chunk);
    // Node corks the socket on a write and uncorks it on the next tick, which waits for every
    // promise job queued meanwhile (the rest of the model's reply, the turn's store): out now.
    res.socket?.uncork();
  }
  res.end();
}

type HeaderValue = string | number | boolean;
interface StructuredResult {
  statusCode: number;
  headers?: Record<string, HeaderValue>;
  multiValueHeaders?: Record<string, HeaderValue[]>;
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
}

/**
 * Writes a handler's result as API Gateway would. A result without `statusCode` is a 200
 * JSON body (payload 2.0's inference); a malformed or oversized one is an error, as in AWS.
 */
export function writeResult(res: ServerResponse, result: APIGatewayProxyResultV2 | undefined, requestId: string): void {
  const structured: StructuredResult =
    typeof result === 'object' && result !== null && 'statusCode' in result
      ? (result as StructuredResult)
      : { statusCode: 200, headers: { 'content-type': 'application/json' }, body: typeof result === 'string' ? result : JSON.stringify(result ?? null) };
  const { statusCode } = structured;
  if (!Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) {
    throw new Error(`Handler returned an invalid statusCode: ${String(statusCode)}`);
  }
  const body = structured.body === undefined || structured.body === null ? Buffer.alloc(0) : Buffer.from(String(structured.body), structured.isBase64Encoded ? 'base64' : 'utf8');
  if (body.length > LAMBDA_PAYLOAD_LIMIT) throw new Error(`Handler response of ${body.length} bytes exceeds Lambda's ${LAMBDA_PAYLOAD_LIMIT}-byte limit`);
  res.setHeader('apigw-requestid', requestId);
  for (const [name, values] of Object.entries(structured.multiValueHeaders ?? {})) res.setHeader(name, values.map(String));
  for (const [name, value] of Object.entries(structured.headers ?? {})) res.setHeader(name, String(value));
  if (structured.cookies?.length) res.appendHeader('set-cookie', structured.cookies);
  res.setHeader('content-length', body.length);
  res.writeHead(statusCode);
  res.end(body);
}

import type { APIGatewayProxyEvent, APIGatewayProxyEventV2, APIGatewayProxyResultV2, Context } from 'aws-lambda';
import { isStreamBody, streamingInvocation } from '../domain/common/stream-body';
import { answersFirst, runAfterAnswer } from '../after-answer';
import { flushMetrics } from '../telemetry/metrics';
import { logsWritten } from '../logger';

/**
 * Deployed response streaming (docs/architecture.md, "Streaming routes"). The streaming routes are
 * also served by a REST API whose Lambda proxy integrations use `responseTransferMode: STREAM`
 * (lib/streaming-api.ts); that integration invokes the function's `streamHandler` with
 * InvokeWithResponseStream and a REST (payload 1.0) event. `streamResponses` turns the operation's
 * ordinary handler (the shared Middy stack: auth, rate limit, validation, idempotency, envelopes)
 * into that `streamHandler`: it converts the event to the HTTP API's payload 2.0 the middleware
 * reads, runs the handler, and writes its answer through `awslambda.HttpResponseStream` (status
 * and headers first, then the body: each server-sent event as it is produced, or the plain JSON
 * envelope whole). Locally the server writes a stream body itself (shared/local/http-server.ts).
 */

type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyResultV2> | APIGatewayProxyResultV2;

interface ResponseStream {
  write(chunk: string | Uint8Array): boolean;
  end(): void;
}

/** Lambda's Node.js runtime global for response streaming (absent outside Lambda). */
interface LambdaStreaming {
  streamifyResponse(fn: (event: unknown, stream: ResponseStream, context: Context) => Promise<void>): unknown;
  HttpResponseStream: { from(stream: ResponseStream, prelude: { statusCode: number; headers: Record<string, string> }): ResponseStream };
}

/** The REST API's proxy event (payload 1.0) as the HTTP API's payload 2.0, which the middleware reads. */
export function restEventToV2(event: APIGatewayProxyEvent): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(event.headers ?? {})) if (value !== undefined) headers[name.toLowerCase()] = value;
  for (const [name, values] of Object.entries(event.multiValueHeaders ?? {})) if (values?.length) headers[name.toLowerCase()] = values.join(',');
  const query = new URLSearchParams();
  for (const [name, values] of Object.entries(event.multiValueQueryStringParameters ?? {})) for (const v of values ?? []) query.append(name, v);
  const queryStringParameters: Record<string, string> = {};
  for (const [name, value] of query) queryStringParameters[name] = name in queryStringParameters ? `${queryStringParameters[name]},${value}` : value;
  const ctx = event.requestContext;
  // The stage's name is not part of the route (`/prod/api/v1/…` reaches us as path `/api/v1/…`).
  const rawPath = event.path;
  return {
    version: '2.0',
    routeKey: `${event.httpMethod} ${event.resource}`,
    rawPath,
    rawQueryString: query.toString(),
    headers,
    ...(Object.keys(queryStringParameters).length ? { queryStringParameters } : {}),
    ...(event.pathParameters ? { pathParameters: event.pathParameters as Record<string, string> } : {}),
    requestContext: {
      accountId: ctx.accountId,
      apiId: ctx.apiId,
      domainName: ctx.domainName ?? '',
      domainPrefix: ctx.domainPrefix ?? '',
      http: { method: event.httpMethod, path: rawPath, protocol: ctx.protocol, sourceIp: ctx.identity.sourceIp, userAgent: ctx.identity.userAgent ?? '' },
      requestId: ctx.requestId,
      routeKey: `${event.httpMethod} ${event.resource}`,
      stage: ctx.stage,
      time: ctx.requestTime ?? '',
      timeEpoch: ctx.requestTimeEpoch,
    },
    ...(event.body !== null && event.body !== undefined ? { body: event.body } : {}),
    isBase64Encoded: event.isBase64Encoded,
  };
}

/**
 * The handler for a streaming integration (see the module comment). Outside Lambda (no
 * `awslambda` global) it is the plain handler, so importing an entry file never fails.
 */
export function streamResponses(handler: Handler): unknown {
  const lambda = (globalThis as { awslambda?: LambdaStreaming }).awslambda;
  if (typeof lambda?.streamifyResponse !== 'function') return handler;
  return lambda.streamifyResponse(async (event, responseStream, context) => {
    const v2 = (event as { version?: string }).version === '2.0' ? (event as APIGatewayProxyEventV2) : restEventToV2(event as APIGatewayProxyEvent);
    const invocation = answersFirst(streamingInvocation(context));
    const result = (await handler(v2, invocation)) as { statusCode?: number; headers?: Record<string, unknown>; body?: unknown; isBase64Encoded?: boolean };
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
    const out = lambda.HttpResponseStream.from(responseStream, { statusCode: result.statusCode ?? 200, headers });
    // The status and headers (the prelude) go out on the stream's first write, and only then: an
    // answer without a body (a preflight, a 304) that only ended the stream would lose them
    // (aws-lambda-nodejs-runtime-interface-client#97). An empty write sends them now, before the
    // first event, whatever follows.
    out.write('');
    try {
      if (isStreamBody(result.body)) {
        for await (const chunk of result.body.chunks) out.write(chunk);
      } else if (result.body !== undefined && result.body !== null) {
        out.write(result.isBase64Encoded ? Buffer.from(String(result.body), 'base64') : String(result.body));
      }
    } finally {
      // A streamed turn ends after the handler returned (shared/http/handler.ts flushed then): its reply's metrics leave now.
      await flushMetrics();
    }
    out.end();
    // The client has the whole response once the stream has ended; the invocation lasts until this
    // handler returns, so what the function left for after its answer runs now (after-answer.ts).
    await runAfterAnswer(invocation);
    await logsWritten();
  });
}

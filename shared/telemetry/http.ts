import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { flushBeforeAnswer } from './lambda-extension';
import { contextFrom, flushTracing, markFailed, SpanKind, startTracing, TRACEPARENT_PATTERN, tracer } from './tracing';

type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * The HTTP server span of one API request, around the whole middleware stack (authentication's
 * reads included): `{method} {route}` with the HTTP semantic-convention attributes, continuing a
 * caller's `traceparent`. Tracing off, the handler runs as it is after one settings check.
 * Middy's `before`/`after` cannot hold an active context across the stack, hence a wrapper.
 */
export function tracedHandler<H extends Handler>(operation: { method: string; path: string; operationId: string }, handler: H): H {
  const traced = async (event: APIGatewayProxyEventV2, context: Context) => {
    if (!(await startTracing())) return handler(event, context);
    // The carrier's callbacks carry the call's trace in their URL (tracing.ts withTraceQuery), which we made and the carrier signed:
    // it wins over a `traceparent` header (the carrier's own tracing, if any); any other request continues its caller's header.
    const queried = event.queryStringParameters?.traceparent;
    const parent = contextFrom(queried && TRACEPARENT_PATTERN.test(queried) ? { traceparent: queried } : (event.headers ?? {}));
    const path = event.rawPath ?? event.requestContext?.http?.path;
    try {
      return await tracer().startActiveSpan(
        `${operation.method} ${operation.path}`,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': operation.method,
            'http.route': operation.path,
            'url.scheme': 'https',
            ...(path ? { 'url.path': path } : {}),
            'operation.id': operation.operationId,
            ...(event.requestContext?.requestId ? { 'aws.request_id': event.requestContext.requestId } : {}),
          },
        },
        parent,
        async (span) => {
          try {
            const response = await handler(event, context);
            const status = response?.statusCode ?? 200;
            span.setAttribute('http.response.status_code', status);
            if (status >= 500) {
              markFailed(span);
              span.setAttribute('error.type', String(status));
            }
            return response;
          } catch (err) {
            markFailed(span, (err as Error)?.message);
            span.setAttribute('error.type', (err as Error)?.name ?? 'Error');
            throw err;
          } finally {
            span.end();
          }
        },
      );
    } finally {
      // A real Lambda is frozen once it answers: its spans leave first, unless the trace export
      // extension sends them after the answer (lambda-extension.ts).
      if (flushBeforeAnswer()) await flushTracing();
    }
  };
  // Keep Middy's own members (`use`, `before`…) on the exported handler.
  return Object.assign(traced, handler) as unknown as H;
}

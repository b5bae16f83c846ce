import middy from '@middy/core';
import type * as z from 'zod/mini';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { Operation } from './operation';
import { stateOf, type Caller } from './context';
import { requestContext } from './middleware/request-context';
import { errorEnvelope } from './middleware/error-envelope';
import { formBody } from './middleware/form-body';
import { jsonBody } from './middleware/json-body';
import { fixedPath } from './middleware/fixed-path';
import { apiKeyAuth } from './middleware/auth';
import { rateLimit } from './middleware/rate-limit';
import { validate } from './middleware/validate';
import { idempotency } from './middleware/idempotency';
import { bufferStream } from './middleware/buffer-stream';
import { successEnvelope } from './middleware/success-envelope';
import { materialize } from '../domain/common/lazy';
import { afterAnswerOf, type AnswerTask } from '../after-answer';
import { tracedHandler } from '../telemetry/http';
import { flushMetrics } from '../telemetry/metrics';
import { logsWritten } from '../logger';

type Out<S> = S extends z.ZodMiniType ? z.output<S> : undefined;

/** What an entry file's function receives: validated input and the caller. */
export interface HandlerInput<P, Q, B> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  caller: Caller;
  requestId: string;
  /** When this function received the request (Date.now(), before any middleware): where a reply's `e2e` starts. */
  receivedMs: number;
  event: APIGatewayProxyEventV2;
  /** Adds a header to the response (CORS on public endpoints, for instance). */
  setHeader(name: string, value: string): void;
  /**
   * Queues work to run once the answer has been handed back, where the invocation can
   * (shared/after-answer.ts); undefined where it cannot.
   */
  afterAnswer: ((task: AnswerTask) => void) | undefined;
}

/**
 * Wraps an operation's function in the shared middleware stack, in this fixed order:
 * request context (request id, access log, response headers) → error envelope → fixed path (405
 * for a wrong method on a fixed path that API Gateway routed to a `{param}` route) → JSON (or form)
 * body → API-key auth → rate limit → validation → stream buffering (a stream answered whole where the
 * response cannot stream) → idempotency (POST that writes) → success envelope.
 * Middy runs `before` in that order and `after`/`onError` in reverse. Around it all, the request's
 * trace span (shared/telemetry/http.ts), and the flush of the request's metrics as it ends
 * (shared/telemetry/metrics.ts: a Lambda is frozen once it answers).
 */
export function http<P extends z.ZodMiniType, Q extends z.ZodMiniType, B extends z.ZodMiniType>(
  operation: Operation<P, Q, B>,
  fn: (input: HandlerInput<P, Q, B>) => unknown,
) {
  const core = async (event: APIGatewayProxyEventV2, context: Context) => {
    const state = stateOf(event);
    const input = state.input as { params: Out<P>; query: Out<Q>; body: Out<B> };
    return fn({
      ...input,
      caller: state.caller as Caller,
      requestId: state.requestId,
      receivedMs: state.startedAt,
      event,
      setHeader: (name, value) => {
        state.responseHeaders[name.toLowerCase()] = value;
      },
      afterAnswer: afterAnswerOf(context),
    }) as Promise<APIGatewayProxyStructuredResultV2>;
  };
  const op = operation as Operation;
  // Schemas are declared lazily (shared/domain/common/lazy.ts): build this operation's own now,
  // at load, so the first request does no more work than any other.
  for (const schema of [op.params, op.query, op.body]) materialize(schema);
  const handler = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context>(core)
    .use(requestContext(op))
    .use(errorEnvelope())
    .use(fixedPath())
    .use(op.bodyFormat === 'form' ? formBody() : jsonBody());
  if (op.auth) handler.use(apiKeyAuth()).use(rateLimit());
  handler.use(validate());
  // Before idempotency, so its `after` (a stream read whole where the response cannot stream) runs after idempotency's.
  handler.use(bufferStream());
  // A POST whose function may not write the table (discover, query) changes nothing, so a repeat
  // is already safe: it ignores Idempotency-Key rather than store an answer it is not granted to.
  if (op.auth && op.method === 'POST' && op.access.table === 'RW') handler.use(idempotency());
  handler.use(successEnvelope());
  const flushed = async (event: APIGatewayProxyEventV2, context: Context) => {
    try {
      return await handler(event, context);
    } finally {
      await flushMetrics();
      await logsWritten();
    }
  };
  // Outside the stack: the request's server span (OpenTelemetry, when the OTEL_* settings turn it on) holds all of it.
  return tracedHandler(op, Object.assign(flushed, handler));
}

import { randomUUID } from 'node:crypto';
import type { Operation } from '../operation';
import { bindState, header, type HttpRequest } from '../context';
import { logger } from '../../logger';
import type { HttpMiddleware } from './types';

const SAFE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Pick the request id: the caller's `X-Request-Id` when it is safe to echo, else the gateway's. */
export function requestIdOf(request: HttpRequest): string {
  const given = header(request.event, 'x-request-id');
  if (given && SAFE_ID.test(given)) return given;
  return request.event.requestContext?.requestId || randomUUID();
}

/**
 * Outermost middleware: sets up the shared request state, and on the way out stamps every
 * response (success or error) with `X-Request-Id` and the headers other middlewares queued,
 * then writes one access log line. Bodies and headers are never logged.
 */
export function requestContext(operation: Operation): HttpMiddleware {
  const finish = (request: HttpRequest) => {
    const state = request.internal.http;
    if (!state || !request.response) return;
    request.response.headers = { ...request.response.headers, ...state.responseHeaders, 'x-request-id': state.requestId };
    logger.info('request', {
      request_id: state.requestId,
      operation: operation.operationId,
      method: request.event.requestContext?.http?.method,
      status: request.response.statusCode,
      organization_id: state.caller?.organizationId,
      duration_ms: Date.now() - state.startedAt,
    });
  };
  return {
    name: 'request-context',
    before: (request) => {
      request.internal.http = {
        operation,
        requestId: requestIdOf(request),
        startedAt: Date.now(),
        input: { params: {}, query: {}, body: undefined },
        responseHeaders: {},
      };
      bindState(request.event, request.internal.http);
    },
    after: finish,
    onError: finish,
  };
}

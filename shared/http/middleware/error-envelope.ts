import { AppError } from '../../errors';
import { errorBody, jsonResponse } from '../envelope';
import { openAiErrorBody } from '../../domain/openai-compat/errors';
import { logger } from '../../logger';
import type { HttpMiddleware } from './types';

/** Thrown to answer with a response computed before the handler (an idempotent replay). */
export class EarlyResponse extends Error {
  constructor(readonly response: { statusCode: number; body: string; headers?: Record<string, string> }) {
    super('early response');
  }
}

/** A status the OpenAI SDKs would retry, or that may come out otherwise, answered no differently by a retry. */
export const isPermanent = (status: number): boolean => (status < 500 && ![408, 409, 429].includes(status)) || status === 502;

/**
 * The one place errors become HTTP answers. Typed errors keep their status, code and details;
 * anything else is logged with its cause and answered with a generic 500 naming the request id.
 */
export function errorEnvelope(): HttpMiddleware {
  return {
    name: 'error-envelope',
    onError: (request) => {
      const err = request.error;
      if (err instanceof EarlyResponse) {
        request.response = { ...err.response, headers: { 'content-type': 'application/json; charset=utf-8', ...err.response.headers } };
        return;
      }
      const requestId = request.internal.http?.requestId;
      if (err instanceof AppError) {
        if (err.statusCode >= 500) logger.error('request failed', { request_id: requestId, error: err });
        // A 429, and a 503 that knows when to come back (a model that failed), say when to retry.
        const retryAfter = (err as AppError & { retryAfterSeconds?: number }).retryAfterSeconds;
        const extra: Record<string, string> = typeof retryAfter === 'number' ? { 'retry-after': String(retryAfter) } : {};
        if (err.code === 'METHOD_NOT_ALLOWED') extra.allow = ((err.details.allowed as string[]) ?? []).join(', ');
        const openAi = request.internal.http?.operation.openAiCompatible;
        // OpenAI's SDKs retry 408, 409, 429 and 5xx unless told not to: a refusal retrying cannot cure
        // (a 4xx, a model that refused the request: 502) says so.
        if (openAi && isPermanent(err.statusCode)) extra['x-should-retry'] = 'false';
        request.response = jsonResponse(err.statusCode, openAi ? openAiErrorBody(err) : errorBody(err), extra);
        return;
      }
      logger.error('unhandled error', { request_id: requestId, error: err as Error });
      const internal = { code: 'INTERNAL' as const, message: 'Internal server error', details: { request_id: requestId } };
      request.response = jsonResponse(500, request.internal.http?.operation.openAiCompatible ? openAiErrorBody(internal) : errorBody(internal));
    },
  };
}

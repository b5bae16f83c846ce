import { httpState } from '../context';
import { jsonResponse, successBody } from '../envelope';
import { isListResult } from '../../domain/common/list-result';
import { isRawBody } from '../../domain/common/raw-body';
import { isAccepted } from '../../domain/common/accepted';
import { isStreamBody } from '../../domain/common/stream-body';
import type { HttpMiddleware } from './types';

/** The envelope's `message` when an operation names none. */
export const DEFAULT_MESSAGES: Record<string, string> = {
  GET: 'Retrieved successfully',
  POST: 'Created successfully',
  PUT: 'Updated successfully',
  PATCH: 'Updated successfully',
  DELETE: 'Deleted successfully',
};

/** A handler's value that carries its own message (e.g. an action such as "Campaign started"). */
export interface WithMessage {
  __message: string;
  data?: unknown;
}

export function withMessage(message: string, data?: unknown): WithMessage {
  return { __message: message, data };
}

/**
 * Wraps what the handler returned in the success envelope: `data` (absent for deletions),
 * `meta` for lists. Success is HTTP 200, as the API promises; an operation that declares `accepted`
 * answers 202 (the same envelope) when its function marks its data accepted but not done.
 */
export function successEnvelope(): HttpMiddleware {
  return {
    name: 'success-envelope',
    after: (request) => {
      const state = httpState(request);
      const op = state.operation;
      const value = request.response as unknown;
      // Server-sent events (a streamed chat turn): the body is written as it is produced.
      if (isStreamBody(value)) {
        request.response = { statusCode: 200, headers: { 'content-type': value.contentType, 'cache-control': 'no-cache', 'x-accel-buffering': 'no' }, body: value as unknown as string };
        return;
      }
      if (op.rawResponse) {
        request.response = isRawBody(value)
          ? { statusCode: value.statusCode ?? 200, headers: { 'content-type': value.contentType }, body: value.body, ...(value.base64 ? { isBase64Encoded: true } : {}) }
          : jsonResponse(200, value);
        return;
      }
      let message = op.successMessage ?? DEFAULT_MESSAGES[op.method];
      let data: unknown = value;
      if (isAccepted(value)) {
        request.response = jsonResponse(202, successBody(op.acceptedMessage ?? message, value.data));
        return;
      }
      if (value && typeof value === 'object' && '__message' in value) {
        message = (value as WithMessage).__message;
        data = (value as WithMessage).data;
      }
      if (isListResult(data)) {
        request.response = jsonResponse(200, successBody(message, data.items, data.meta));
        return;
      }
      request.response = jsonResponse(200, successBody(message, op.method === 'DELETE' ? undefined : data ?? undefined));
    },
  };
}

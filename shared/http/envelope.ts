import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { AppError } from '../errors';
import type { ListMeta } from '../domain/common/list-result';

/** The JSON success envelope: `data` absent for deletions, `meta` only on lists. */
export function successBody(message: string, data?: unknown, meta?: ListMeta) {
  return { success: true, message, ...(data !== undefined ? { data } : {}), ...(meta ? { meta } : {}) };
}

/** The JSON error envelope. */
export function errorBody(err: Pick<AppError, 'message' | 'code' | 'details'>) {
  return { success: false, message: err.message, error: { code: err.code, message: err.message, details: err.details } };
}

/** A JSON response with the given status. */
export function jsonResponse(statusCode: number, body: unknown, headers: Record<string, string> = {}): APIGatewayProxyStructuredResultV2 {
  return { statusCode, headers: { 'content-type': 'application/json; charset=utf-8', ...headers }, body: JSON.stringify(body) };
}

import type { ErrorCode } from '../../errors';

/**
 * Errors on the OpenAI-compatible paths, shaped as OpenAI's (`{ error: { message, type, param,
 * code } }`) so its SDKs raise their own classes (AuthenticationError for 401, NotFoundError for
 * 404, BadRequestError for 400, RateLimitError for 429…). The HTTP status is the platform's.
 */
const TYPES: Partial<Record<ErrorCode, { type: string; code: string | null }>> = {
  UNAUTHORIZED: { type: 'invalid_request_error', code: 'invalid_api_key' },
  NOT_FOUND: { type: 'invalid_request_error', code: 'model_not_found' },
  VALIDATION_ERROR: { type: 'invalid_request_error', code: null },
  PAYLOAD_TOO_LARGE: { type: 'invalid_request_error', code: null },
  RATE_LIMITED: { type: 'rate_limit_exceeded', code: 'rate_limit_exceeded' },
  UNAVAILABLE: { type: 'server_error', code: 'model_unavailable' },
  BAD_GATEWAY: { type: 'server_error', code: 'model_error' },
};

export function openAiErrorBody(err: { code: ErrorCode; message: string; details: Record<string, unknown> }): { error: { message: string; type: string; param: string | null; code: string | null } } {
  const known = TYPES[err.code] ?? { type: err.code === 'INTERNAL' ? 'server_error' : 'invalid_request_error', code: err.code.toLowerCase() };
  const fields = err.details.fields as { path?: string }[] | undefined;
  const param = fields?.[0]?.path ?? (typeof err.details.param === 'string' ? err.details.param : null);
  return { error: { message: err.message, type: known.type, param: param || null, code: (err.details.openai_code as string | undefined) ?? known.code } };
}

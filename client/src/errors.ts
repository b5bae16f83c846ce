import type { components } from './schema.js';

/** The `error` member of the API's failure envelope. */
export type ErrorBody = components['schemas']['ErrorEnvelope']['error'];
/** The codes the API documents (docs/api.md, "Errors"). */
export type ErrorCode = ErrorBody['code'];
/** `error.details`: `fields` on validation errors, other facts about the failure otherwise. */
export type ErrorDetails = ErrorBody['details'];

/**
 * Every answer outside 2xx, as a typed error. `code`, `message` and `details` come from the API's
 * envelope; an answer without one (a proxy's 502, API Gateway's own 429) gets `code` `HTTP_<status>`.
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** The HTTP status. */
  readonly status: number;
  /** `error.code` of the envelope, or `HTTP_<status>` when the answer had no envelope. */
  readonly code: ErrorCode | `HTTP_${number}`;
  /** `error.details` of the envelope (`{}` when there was none). */
  readonly details: ErrorDetails;
  /** The `X-Request-Id` the API answered with (quote it to support). */
  readonly requestId: string | undefined;
  /** `Retry-After` in seconds, when the answer carried one (429, 503). */
  readonly retryAfterSeconds: number | undefined;
  readonly method: string;
  readonly url: string;

  constructor(init: {
    status: number;
    code: ErrorCode | `HTTP_${number}`;
    message: string;
    details?: ErrorDetails;
    requestId?: string;
    retryAfterSeconds?: number;
    method: string;
    url: string;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.details = init.details ?? {};
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds;
    this.method = init.method;
    this.url = init.url;
  }

  /** `details.fields` of a validation (400) or unprocessable (422) answer; empty otherwise. */
  get fields(): { path: string; message: string }[] {
    return this.details.fields ?? [];
  }

  /** Reads a non-2xx response into an ApiError (the body is read from a clone). */
  static async from(request: Request, response: Response): Promise<ApiError> {
    const text = await response.clone().text().catch(() => '');
    let envelope: { error?: Partial<ErrorBody>; message?: string } | undefined;
    try {
      envelope = text ? JSON.parse(text) : undefined;
    } catch {
      envelope = undefined;
    }
    const error = envelope && typeof envelope === 'object' ? envelope.error : undefined;
    const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'), Date.now());
    return new ApiError({
      status: response.status,
      code: typeof error?.code === 'string' ? error.code : `HTTP_${response.status}`,
      message: error?.message ?? envelope?.message ?? (text.slice(0, 200) || `HTTP ${response.status}`),
      details: error?.details && typeof error.details === 'object' ? error.details : {},
      requestId: response.headers.get('x-request-id') ?? undefined,
      retryAfterSeconds: retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000),
      method: request.method,
      url: request.url,
    });
  }
}

/**
 * `Retry-After` in milliseconds from `now`: delta-seconds or an HTTP date (RFC 9110 §10.2.3);
 * undefined when absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

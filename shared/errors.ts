/**
 * Typed errors. Domain code throws these; the error-envelope middleware is the one place
 * that turns them into HTTP responses. `expose` false means the message stays in the logs.
 */
export type ErrorCode =
  | 'VALIDATION_ERROR'
  | 'UNAUTHORIZED'
  | 'NOT_FOUND'
  | 'METHOD_NOT_ALLOWED'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNPROCESSABLE'
  | 'RATE_LIMITED'
  | 'CONCURRENCY_LIMIT'
  | 'INTERNAL'
  | 'BAD_GATEWAY'
  | 'UNAVAILABLE';

export interface FieldIssue {
  path: string;
  message: string;
}

export class AppError extends Error {
  readonly expose: boolean = true;
  constructor(
    readonly statusCode: number,
    readonly code: ErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = new.target.name;
  }

  toJSON() {
    return { code: this.code, message: this.message, details: this.details };
  }
}

/** 400: the request is malformed; `fields` names every offending field. */
export class ValidationError extends AppError {
  constructor(message: string, fields: FieldIssue[] = [], extra: Record<string, unknown> = {}) {
    super(400, 'VALIDATION_ERROR', message, fields.length ? { fields, ...extra } : extra);
  }
  /** A single offending field. */
  static field(path: string, message: string): ValidationError {
    return new ValidationError(`${path}: ${message}`, [{ path, message }]);
  }
}

export class UnauthorizedError extends AppError {
  constructor(message = 'Missing or invalid API key') {
    super(401, 'UNAUTHORIZED', message);
  }
}

export class NotFoundError extends AppError {
  constructor(resource: string, id?: string) {
    super(404, 'NOT_FOUND', id ? `${resource} ${id} not found` : `${resource} not found`, id ? { resource, id } : { resource });
  }
}

export class MethodNotAllowedError extends AppError {
  constructor(method: string, path: string, allowed: string[]) {
    super(405, 'METHOD_NOT_ALLOWED', `Method ${method} is not allowed on ${path}`, { allowed });
  }
}

export class ConflictError extends AppError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(409, 'CONFLICT', message, details);
  }
}

export class PayloadTooLargeError extends AppError {
  constructor(limitBytes: number) {
    super(413, 'PAYLOAD_TOO_LARGE', `Request body exceeds ${limitBytes} bytes`, { limit_bytes: limitBytes });
  }
}

/** 413: the resource would exceed what one stored item may hold (DynamoDB's 400 KB). */
export class ItemTooLargeError extends AppError {
  constructor(limitBytes: number) {
    super(413, 'PAYLOAD_TOO_LARGE', `The resource would exceed the ${limitBytes} bytes a stored item may hold`, { limit_bytes: limitBytes });
  }
}

/** 422: the request is well formed but cannot be carried out (a slot is taken, a price changed). */
export class UnprocessableError extends AppError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(422, 'UNPROCESSABLE', message, details);
  }
}

export class RateLimitedError extends AppError {
  constructor(readonly retryAfterSeconds: number) {
    super(429, 'RATE_LIMITED', `Rate limit exceeded; retry after ${retryAfterSeconds} s`, { retry_after_seconds: retryAfterSeconds });
  }
}

/** 429: the organization's live calls are at its concurrency limit; `Retry-After` says when to try again. */
export class ConcurrencyLimitError extends AppError {
  constructor(readonly limit: number, inProgress: number, readonly retryAfterSeconds: number) {
    super(429, 'CONCURRENCY_LIMIT', `The organization has ${inProgress} live calls, at its concurrency limit of ${limit}; retry after ${retryAfterSeconds} s`, { limit, in_progress: inProgress });
  }
}

export class UnavailableError extends AppError {
  /** When set, the answer carries `Retry-After` (seconds). */
  readonly retryAfterSeconds?: number;

  constructor(message: string, details: Record<string, unknown> = {}, retryAfterSeconds?: number) {
    super(503, 'UNAVAILABLE', message, details);
    if (retryAfterSeconds !== undefined) this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * 502: a provider we depend on (the conversation model) refused the request in a way retrying
 * cannot cure (a wrong key, an unknown model, a rejected request). No `Retry-After`: an operator
 * must act; `details.reason` says what, `details.provider_message` what the provider said.
 */
export class BadGatewayError extends AppError {
  constructor(message: string, details: Record<string, unknown> = {}) {
    super(502, 'BAD_GATEWAY', message, details);
  }
}

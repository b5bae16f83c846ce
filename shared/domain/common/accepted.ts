/**
 * A success the request did not complete yet (HTTP 202): the answer's data is what was accepted
 * (a call that waits for a concurrency slot). The areas mark it here, below HTTP; the
 * success-envelope middleware (shared/http/middleware/success-envelope.ts) recognizes the marker
 * and answers 202 with the same envelope a 200 has.
 */

const ACCEPTED = Symbol('accepted');

export interface Accepted<T> {
  [ACCEPTED]: true;
  data: T;
}

export function accepted<T>(data: T): Accepted<T> {
  return { [ACCEPTED]: true, data };
}

export function isAccepted(value: unknown): value is Accepted<unknown> {
  return typeof value === 'object' && value !== null && ACCEPTED in value;
}

import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { UnavailableError } from '../errors';

/**
 * How conditional writes that lost a race are retried everywhere: up to MAX_ATTEMPTS, each
 * after a jittered exponential pause, so racing writers spread out instead of colliding again.
 */
export const MAX_ATTEMPTS = 25;

/**
 * How often `transact` sends a write DynamoDB cancelled for a transaction conflict (retryable,
 * not a failed condition: references.md) before it answers 503 TransactionConflict.
 */
export const CONFLICT_ATTEMPTS = 8;

/** Waits a random time below min(capMs, baseMs × 2^attempt) ("full jitter"). */
export function pause(attempt: number, capMs = 200, baseMs = 5): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(capMs, baseMs * 2 ** attempt)));
}

/**
 * Thrown by `transact` when DynamoDB kept cancelling the write for a conflict with another
 * transaction (`TransactionConflict`, or `TransactionConflictException` on a lone write) after
 * CONFLICT_ATTEMPTS tries. Nothing was written and no condition failed: retryable, never "already
 * stored" (a caller that reads ConditionFailed as "done" must not see this). A 503 with Retry-After.
 */
export class TransactionConflict extends UnavailableError {
  constructor(options?: { cause?: unknown }) {
    super('The write collided with concurrent writes to the same items; retry', { reason: 'transaction_conflict' }, 1);
    if (options?.cause) Object.defineProperty(this, 'cause', { value: options.cause, enumerable: false });
  }
}

/** True for a conflict with another transaction: the whole write was refused, nothing landed, and no condition failed. */
export function isTransactionConflict(err: unknown): boolean {
  if (err instanceof TransactionCanceledException) {
    const reasons = err.CancellationReasons ?? [];
    return reasons.some((r) => r.Code === 'TransactionConflict') && !reasons.some((r) => r.Code === 'ConditionalCheckFailed');
  }
  const name = (err as { name?: string } | null)?.name;
  return name === 'TransactionConflictException' || name === 'TransactionInProgressException';
}


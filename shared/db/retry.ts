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

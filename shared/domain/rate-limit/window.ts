/**
 * The per-key rate limit's arithmetic, kept free of I/O so it can be tested under a manual clock.
 *
 * A fixed window per key: every request in minute `index` increments one counter; at most
 * `limit` are counted, the rest are refused until the window ends. Chosen over a sliding-window
 * approximation (previous window's count weighted by the overlap) because that needs the
 * previous window's count on every request (a second read, or a two-attribute item rewritten
 * at each boundary), while the fixed window is exactly one conditional UpdateItem, one write
 * unit, per request. Its known looseness: a key may spend its whole allowance at the end of one
 * window and again at the start of the next, up to 2× `limit` within any 60 seconds.
 */
export const WINDOW_SECONDS = 60;
/** Counter items outlive their window by this much before DynamoDB's TTL may remove them. */
export const COUNTER_GRACE_SECONDS = 120;

export interface RateWindow {
  /** Whole windows since the epoch (the counter item's key part). */
  index: number;
  startMs: number;
  endMs: number;
}

/** The window a moment falls in. */
export function windowAt(nowMs: number, seconds = WINDOW_SECONDS): RateWindow {
  const size = seconds * 1000;
  const index = Math.floor(nowMs / size);
  return { index, startMs: index * size, endMs: (index + 1) * size };
}

/** Whole seconds until the window ends, never below 1 (Retry-After, X-RateLimit-Reset). */
export function secondsToEnd(window: RateWindow, nowMs: number): number {
  return Math.max(1, Math.ceil((window.endMs - nowMs) / 1000));
}

/** The counter item's TTL attribute (epoch seconds): a while after the window ends. */
export function counterExpiry(window: RateWindow): number {
  return Math.ceil(window.endMs / 1000) + COUNTER_GRACE_SECONDS;
}

export interface RateDecision {
  allowed: boolean;
  /** Requests left in this window after this one. */
  remaining: number;
  /** Seconds until the window ends. */
  resetSeconds: number;
}

/**
 * What the counter's answer means: `count` is the window's count including this request, or
 * null when the store refused to count it (the window was already full).
 */
export function decide(count: number | null, limit: number, window: RateWindow, nowMs: number): RateDecision {
  const resetSeconds = secondsToEnd(window, nowMs);
  if (count === null || count > limit) return { allowed: false, remaining: 0, resetSeconds };
  return { allowed: true, remaining: Math.max(0, limit - count), resetSeconds };
}

/**
 * Leases (shared/domain/rate-limit/leases.ts): a process claims a slice of a key's minute with one
 * conditional write and spends it in memory. The first slice of a window is a hundredth of the
 * limit, at least `MIN_LEASE` tokens (so a busy process spends at most one write per ten requests);
 * each further slice doubles, up to a tenth of the limit, so a busy process soon claims rarely
 * while a quiet one holds back little of the key's minute from the others.
 */
export const MIN_LEASE = 10;

/** How many tokens the next claim asks for, after a claim of `previous` tokens in the same window (none: the first). */
export function leaseSize(limit: number, previous?: number): number {
  const first = Math.max(MIN_LEASE, Math.ceil(limit / 100));
  const largest = Math.max(first, Math.ceil(limit / 10));
  return Math.max(1, Math.min(previous ? previous * 2 : first, largest, limit));
}

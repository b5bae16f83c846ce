import { counterExpiry, leaseSize, secondsToEnd, windowAt, type RateDecision } from './window';

/** What the counter store answers to a claim (shared/db/rate-counter.ts `claimLease`). */
export interface Lease {
  /** Tokens this claim obtained: the size asked, the rest of the window, or 0 when it was full. */
  granted: number;
  /** Tokens claimed in the window by every process, this claim included. */
  claimed: number;
}

export interface LeaseClaim {
  keyId: string;
  window: number;
  limit: number;
  size: number;
  /** Epoch seconds after which DynamoDB may remove the counter (its `ttl`). */
  expiresAt: number;
}

export type ClaimLease = (claim: LeaseClaim) => Promise<Lease>;

interface KeyLease {
  window: number;
  /** The counter item's TTL for this window. */
  expiresAt: number;
  /** Tokens this process holds for the window, and how many of them it has spent. */
  granted: number;
  spent: number;
  /** The window's total claimed by every process, as of this process's last claim. */
  claimed: number;
  /** The store refused a claim: the window is all claimed. */
  full: boolean;
  lastSize?: number;
  /** The claim under way, if any (at most one per key and process). */
  pending?: Promise<void>;
}

/** Keys remembered per process; beyond this the book starts over (a key then claims afresh). */
const MAX_KEYS = 10_000;

/**
 * One process's leases of the per-key rate limit. Every token spent was claimed first, and a
 * window's claims never exceed its limit (the store's conditional write), so across every process
 * a key is served at most `limit` requests in a calendar minute: the leases add no overshoot.
 * A request spends a token from memory; when what the process holds falls to half its last
 * claim, the next claim starts in the background, so a busy key's requests do not wait on the
 * store. A request waits for a claim only when the process holds no token (its first request of
 * a window, or when it outruns its claims). What leases cost is the other way: tokens a process
 * claimed and did not spend are lost to the others for that minute, at most its last slice.
 */
export class LeaseBook {
  private readonly keys = new Map<string, KeyLease>();

  constructor(
    private readonly claim: ClaimLease,
    private readonly onBackgroundError: (err: Error, keyId: string) => void = () => undefined,
  ) {}

  /**
   * Takes one token for a request at `nowMs`. `wait` bounds how long the request may wait for a
   * claim (it throws, and the caller serves the request uncounted). The answer's `remaining` is
   * what no process had claimed at this process's last claim, plus what this process still holds.
   */
  async take(keyId: string, limit: number, nowMs: number, wait: <T>(p: Promise<T>) => Promise<T>): Promise<RateDecision> {
    const window = windowAt(nowMs);
    let lease = this.keys.get(keyId);
    if (!lease || lease.window !== window.index) {
      if (!lease && this.keys.size >= MAX_KEYS) this.keys.clear();
      lease = { window: window.index, expiresAt: counterExpiry(window), granted: 0, spent: 0, claimed: 0, full: false };
      this.keys.set(keyId, lease);
    }
    // Holding no token: wait for a claim (the one under way, or a new one), again if concurrent
    // requests spent its grant first. Each claim either grants tokens or finds the window full,
    // so this ends within limit / MIN_LEASE claims.
    while (lease.spent >= lease.granted && !lease.full) {
      await wait(this.refill(keyId, lease, limit));
    }
    const resetSeconds = secondsToEnd(window, nowMs);
    if (lease.spent >= lease.granted) return { allowed: false, remaining: 0, resetSeconds };
    lease.spent += 1;
    const held = lease.granted - lease.spent;
    if (!lease.full && !lease.pending && held <= (lease.lastSize ?? 0) / 2) {
      this.refill(keyId, lease, limit).catch((err: Error) => this.onBackgroundError(err, keyId));
    }
    return { allowed: true, remaining: Math.max(0, limit - lease.claimed) + held, resetSeconds };
  }

  /** The claim under way for this key, or a new one. */
  private refill(keyId: string, lease: KeyLease, limit: number): Promise<void> {
    lease.pending ??= (async () => {
      try {
        const size = leaseSize(limit, lease.lastSize);
        const got = await this.claim({ keyId, window: lease.window, limit, size, expiresAt: lease.expiresAt });
        lease.granted += got.granted;
        lease.claimed = Math.max(lease.claimed, got.claimed);
        lease.full = got.granted === 0 || got.claimed >= limit;
        lease.lastSize = Math.max(got.granted, size);
      } finally {
        lease.pending = undefined;
      }
    })();
    return lease.pending;
  }
}

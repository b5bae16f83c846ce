import { rateLimit } from '../../../shared/http/middleware/rate-limit';
import { stateOf } from '../../../shared/http/context';
import { logger } from '../../../shared/logger';
import { counterExpiry, decide, leaseSize, secondsToEnd, windowAt } from '../../../shared/domain/rate-limit/window';
import type { CountRequest, LeaseRequest } from '../../../shared/db/rate-counter';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

/** A counter store in memory, as the table behaves: counts up to the limit, then refuses. */
function memoryCounter() {
  const counts = new Map<string, number>();
  const calls: CountRequest[] = [];
  const count = async (r: CountRequest) => {
    calls.push(r);
    const key = `${r.keyId}#${r.window}`;
    const n = counts.get(key) ?? 0;
    if (n >= r.limit) return null;
    counts.set(key, n + 1);
    return n + 1;
  };
  return { count, calls };
}

const withCaller = (limit?: number) => ({
  before: (req: any) => {
    stateOf(req.event).caller = { organizationId: 'o', keyId: 'k', rateLimitPerMinute: limit };
  },
});

describe('rate-limit window math', () => {
  it('puts a moment in its minute and counts the seconds to its end', () => {
    const w = windowAt(Date.UTC(2026, 0, 1, 12, 0, 59, 400));
    expect(w.startMs).toBe(Date.UTC(2026, 0, 1, 12, 0, 0));
    expect(w.endMs).toBe(Date.UTC(2026, 0, 1, 12, 1, 0));
    expect(windowAt(w.endMs).index).toBe(w.index + 1);
    expect(windowAt(w.endMs - 1).index).toBe(w.index);
    expect(secondsToEnd(w, w.startMs)).toBe(60);
    expect(secondsToEnd(w, w.endMs - 1)).toBe(1);
    expect(secondsToEnd(w, Date.UTC(2026, 0, 1, 12, 0, 59, 400))).toBe(1);
    expect(secondsToEnd(w, Date.UTC(2026, 0, 1, 12, 0, 30, 1))).toBe(30);
    expect(counterExpiry(w)).toBe(w.endMs / 1000 + 120);
  });

  it('allows up to the limit and says what remains', () => {
    const w = windowAt(0);
    expect(decide(1, 3, w, 0)).toEqual({ allowed: true, remaining: 2, resetSeconds: 60 });
    expect(decide(3, 3, w, 45_000)).toEqual({ allowed: true, remaining: 0, resetSeconds: 15 });
    expect(decide(null, 3, w, 45_000)).toEqual({ allowed: false, remaining: 0, resetSeconds: 15 });
    expect(decide(4, 3, w, 45_000).allowed).toBe(false);
  });
});

describe('rate-limit middleware', () => {
  it('counts down, answers 429 with Retry-After to the window end, then opens in the next window', async () => {
    let now = 10_000; // 10 s into a window
    const store = memoryCounter();
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(2),
      rateLimit({ mode: 'request', now: () => now, count: store.count, exhausted: new Map() }));
    const first = parsed(await h(apiEvent(), lambdaContext));
    const second = parsed(await h(apiEvent(), lambdaContext));
    now += 20_000;
    const third = parsed(await h(apiEvent(), lambdaContext));
    now += 30_000; // the next window
    const fourth = parsed(await h(apiEvent(), lambdaContext));
    expect([first.headers['x-ratelimit-remaining'], second.headers['x-ratelimit-remaining']]).toEqual(['1', '0']);
    expect(first.headers['x-ratelimit-reset']).toBe('50');
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('30');
    expect(third.headers['x-ratelimit-limit']).toBe('2');
    expect(third.body.error.code).toBe('RATE_LIMITED');
    expect(fourth.status).toBe(200);
    expect(fourth.headers['x-ratelimit-remaining']).toBe('1');
  });

  it('spends no write on a key whose window this process has seen full', async () => {
    const store = memoryCounter();
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(1),
      rateLimit({ mode: 'request', now: () => 5_000, count: store.count, exhausted: new Map() }));
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push(parsed(await h(apiEvent(), lambdaContext)).status);
    expect(statuses).toEqual([200, 429, 429, 429, 429]);
    expect(store.calls).toHaveLength(2);
  });

  it('applies the organization\'s own limit over the default', async () => {
    const store = memoryCounter();
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(7),
      rateLimit({ mode: 'request', now: () => 0, count: store.count, exhausted: new Map(), defaultPerMinute: 1000 }));
    const r = parsed(await h(apiEvent(), lambdaContext));
    expect(r.headers['x-ratelimit-limit']).toBe('7');
    expect(store.calls[0]).toMatchObject({ keyId: 'k', limit: 7, window: 0, expiresAt: 180 });
  });

  it.each([
    ['fails', () => Promise.reject(Object.assign(new Error('Throughput exceeds the current capacity'), { name: 'ProvisionedThroughputExceededException' }))],
    ['never answers', () => new Promise<number>(() => undefined)],
  ])('serves the request (fail open, no 500) when the counter %s, and logs a warning', async (_, count) => {
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(5),
      rateLimit({ mode: 'request', now: () => 0, count, exhausted: new Map(), timeoutMs: 20 }));
    const r = parsed(await h(apiEvent(), lambdaContext));
    expect(r.status).toBe(200);
    expect(r.headers['x-ratelimit-remaining']).toBeUndefined();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('rate limit not applied'), expect.objectContaining({ key_id: 'k' }));
    warn.mockRestore();
  });

  it('aborts the counter call it stopped waiting for', async () => {
    let signal: AbortSignal | undefined;
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(5),
      rateLimit({ mode: 'request', now: () => 0, count: (r) => { signal = r.signal; return new Promise(() => undefined); }, exhausted: new Map(), timeoutMs: 10 }));
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    expect(parsed(await h(apiEvent(), lambdaContext)).status).toBe(200);
    expect(signal?.aborted).toBe(true);
  });
});

/** A lease store in memory, as the table behaves; `hold()` keeps claims waiting until `release()`. */
function memoryLeases(limit: number) {
  let claimed = 0;
  const claims: LeaseRequest[] = [];
  let holding = false;
  const waiting: (() => void)[] = [];
  const claim = (r: LeaseRequest) => {
    claims.push(r);
    const answer = () => {
      const granted = Math.max(0, Math.min(r.size, limit - claimed));
      claimed += granted;
      return { granted, claimed };
    };
    if (!holding) return Promise.resolve(answer());
    return new Promise<{ granted: number; claimed: number }>((resolve) => waiting.push(() => resolve(answer())));
  };
  return {
    claim,
    claims,
    claimed: () => claimed,
    hold: () => void (holding = true),
    release: () => {
      holding = false;
      waiting.splice(0).forEach((go) => go());
    },
  };
}

const settled = async <T>(p: Promise<T>) => Promise.race([p.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 20))]);

describe('rate-limit leases', () => {
  it('sizes slices: a hundredth of the limit (at least 10), doubling to a tenth', () => {
    expect([leaseSize(1200), leaseSize(1200, 12), leaseSize(1200, 96), leaseSize(1200, 120)]).toEqual([12, 24, 120, 120]);
    expect([leaseSize(100), leaseSize(100, 10), leaseSize(5), leaseSize(100_000)]).toEqual([10, 10, 5, 1000]);
  });

  it('costs at most one write per ten requests, and a request waits on a claim only when the process holds no token', async () => {
    // Prepare: the default limit (1200), one process.
    const store = memoryLeases(1200);
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(1200),
      rateLimit({ mode: 'lease', now: () => 1_000, claim: store.claim, exhausted: new Map(), timeoutMs: 1000 }));
    // Act 1: the first request of the window waits for the first claim (12 tokens).
    store.hold();
    const first = h(apiEvent(), lambdaContext);
    expect(await settled(first)).toBe(false);
    store.release();
    expect(parsed(await first).status).toBe(200);
    // Act 2: with the store holding every claim, the next 11 requests are served from memory; the
    // sixth leaves half the slice, and the next claim starts in the background.
    store.hold();
    for (let i = 0; i < 11; i++) {
      const r = h(apiEvent(), lambdaContext);
      expect(await settled(r)).toBe(true);
      expect(parsed(await r).status).toBe(200);
    }
    expect(store.claims.map((c) => c.size)).toEqual([12, 24]);
    store.release();
    // Act 3: 1,000 more requests.
    const statuses: number[] = [];
    for (let i = 0; i < 1000; i++) statuses.push(parsed(await h(apiEvent(), lambdaContext)).status);
    // Assess: 1,012 served with at most a tenth as many claims (writes), none beyond the limit.
    expect(statuses.every((s) => s === 200)).toBe(true);
    expect(store.claims.length).toBeLessThanOrEqual(1012 / 10);
    expect(store.claimed()).toBeLessThanOrEqual(1200);
  });

  it('never serves more than the limit across processes: what they claim never exceeds it', async () => {
    // Prepare: two processes (two lease books) on one store, limit 45.
    const store = memoryLeases(45);
    const instance = () => stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(45),
      rateLimit({ mode: 'lease', now: () => 1_000, claim: store.claim, exhausted: new Map(), timeoutMs: 1000 }));
    const [a, b] = [instance(), instance()];
    // Act: 200 requests at once, alternating.
    const replies = await Promise.all(Array.from({ length: 200 }, (_, i) => (i % 2 ? a : b)(apiEvent(), lambdaContext)));
    const served = replies.filter((r) => parsed(r).status === 200).length;
    // Assess: every token claimed was spent here (no process was left holding any), so exactly the limit.
    expect(store.claimed()).toBe(45);
    expect(served).toBe(45);
    expect(replies.map((r) => parsed(r)).filter((r) => r.status === 429).every((r) => r.headers['retry-after'] === '59')).toBe(true);
  });

  it('serves uncounted when a claim fails (fail open), and logs a background claim that failed', async () => {
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    let fail = true;
    const store = memoryLeases(1200);
    const claim = (r: LeaseRequest) => (fail ? Promise.reject(new Error('ProvisionedThroughputExceededException')) : store.claim(r));
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(1200),
      rateLimit({ mode: 'lease', now: () => 1_000, claim, exhausted: new Map(), timeoutMs: 50 }));
    const r = parsed(await h(apiEvent(), lambdaContext));
    expect(r.status).toBe(200);
    expect(r.headers['x-ratelimit-remaining']).toBeUndefined();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('rate limit not applied'), expect.objectContaining({ key_id: 'k' }));
    // The store answers again: the next request claims, and is counted.
    fail = false;
    const counted = parsed(await h(apiEvent(), lambdaContext));
    expect(counted.headers['x-ratelimit-remaining']).toBe(String(1200 - 12 + 11));
    // A background claim that fails is logged, and the requests go on from memory.
    fail = true;
    for (let i = 0; i < 6; i++) expect(parsed(await h(apiEvent(), lambdaContext)).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('lease not claimed in the background'), expect.objectContaining({ key_id: 'k' }));
    warn.mockRestore();
  });

  describe('on a manual clock', () => {
    // Jest's fake timers: time moves only when the test moves it, so "at the bound" is exact.
    beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] }));
    afterEach(() => jest.useRealTimers());

    it('stops waiting for a claim at the bound and serves the request uncounted', async () => {
      // Prepare: a claim that never answers; the request's bound is 10 ms.
      jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
      let signal: AbortSignal | undefined;
      const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(5),
        rateLimit({ mode: 'lease', now: () => 0, claim: (r) => { signal = r.signal; return new Promise(() => undefined); }, exhausted: new Map(), timeoutMs: 10 }));
      // Act: the request, then the clock moved to just before the bound, then to it.
      let answered = false;
      const reply = h(apiEvent(), lambdaContext).then((r) => ((answered = true), r));
      await jest.advanceTimersByTimeAsync(9);
      const answeredBeforeBound = answered;
      await jest.advanceTimersByTimeAsync(1);
      // Assess: it waited for the claim until the bound and no longer: served (uncounted) at 10 ms,
      // while the claim itself is still running; the claim is aborted at ten times the bound.
      expect(answeredBeforeBound).toBe(false);
      expect(answered).toBe(true);
      expect(parsed(await reply).status).toBe(200);
      expect(signal?.aborted).toBe(false);
      await jest.advanceTimersByTimeAsync(89);
      expect(signal?.aborted).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(signal?.aborted).toBe(true);
    });
  });
});

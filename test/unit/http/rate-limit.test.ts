import { rateLimit } from '../../../shared/http/middleware/rate-limit';
import { stateOf } from '../../../shared/http/context';
import { logger } from '../../../shared/logger';
import { counterExpiry, decide, secondsToEnd, windowAt } from '../../../shared/domain/rate-limit/window';
import type { CountRequest } from '../../../shared/db/rate-counter';
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
      rateLimit({ now: () => now, count: store.count, exhausted: new Map() }));
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
      rateLimit({ now: () => 5_000, count: store.count, exhausted: new Map() }));
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push(parsed(await h(apiEvent(), lambdaContext)).status);
    expect(statuses).toEqual([200, 429, 429, 429, 429]);
    expect(store.calls).toHaveLength(2);
  });

  it('applies the organization\'s own limit over the default', async () => {
    const store = memoryCounter();
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(7),
      rateLimit({ now: () => 0, count: store.count, exhausted: new Map(), defaultPerMinute: 1000 }));
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
      rateLimit({ now: () => 0, count, exhausted: new Map(), timeoutMs: 20 }));
    const r = parsed(await h(apiEvent(), lambdaContext));
    expect(r.status).toBe(200);
    expect(r.headers['x-ratelimit-remaining']).toBeUndefined();
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('rate limit not applied'), expect.objectContaining({ key_id: 'k' }));
    warn.mockRestore();
  });

  it('aborts the counter call it stopped waiting for', async () => {
    let signal: AbortSignal | undefined;
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }), withCaller(5),
      rateLimit({ now: () => 0, count: (r) => { signal = r.signal; return new Promise(() => undefined); }, exhausted: new Map(), timeoutMs: 10 }));
    jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    expect(parsed(await h(apiEvent(), lambdaContext)).status).toBe(200);
    expect(signal?.aborted).toBe(true);
  });
});

import { createServer, type Server } from 'node:net';
import { v7 as uuidv7 } from 'uuid';
import { getItem } from '../../shared/db/store';
import { keys } from '../../shared/db/keys';
import { windowAt } from '../../shared/domain/rate-limit/window';
import { apiEvent, lambdaContext, parsed } from '../support/events';

type Handler = (event: unknown, context: unknown) => Promise<unknown>;

/**
 * One "process": the middleware stack loaded in a module registry of its own, so its database
 * client and its in-process state are its own, as in a separate Lambda instance.
 */
function instance(keyId: string, limit: number, options: Record<string, unknown> = {}, watch?: (call: Promise<unknown>) => void): Handler {
  let handler: Handler | undefined;
  jest.isolateModules(() => {
    /* eslint-disable @typescript-eslint/no-require-imports */
    const { stack, op } = require('../unit/http/stack');
    const { rateLimit } = require('../../shared/http/middleware/rate-limit');
    const { countRequest, claimLease } = require('../../shared/db/rate-counter');
    // This instance's own counter (its own client); `watch` sees each call it makes.
    // Every counter write of either kind (one UpdateItem each) is counted in `writes`.
    const writes = options.writes as { n: number } | undefined;
    options = {
      ...options,
      count: (r: unknown) => { if (writes) writes.n++; const call = countRequest(r); watch?.(call); return call; },
      claim: (r: unknown) => { if (writes) writes.n++; const call = claimLease(r); watch?.(call); return call; },
    };
    const { stateOf: isolatedState } = require('../../shared/http/context');
    handler = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }),
      { before: (req: any) => { isolatedState(req.event).caller = { organizationId: 'o', keyId, rateLimitPerMinute: limit }; } },
      rateLimit({ timeoutMs: 10_000, ...options }));
  });
  return handler!;
}

describe('the per-key rate limit across processes (DynamoDB Local)', () => {
  it('with leases, never serves more than the limit across two independent instances, at a tenth of a write per request', async () => {
    // Prepare: one key, two instances (each its own module registry, client and leases); a fixed
    // clock so all requests fall in one window.
    const keyId = uuidv7();
    const now = () => Date.UTC(2030, 0, 1, 0, 0, 5);
    const writes = { n: 0 };
    const a = instance(keyId, 100, { now, mode: 'lease', writes });
    const b = instance(keyId, 100, { now, mode: 'lease', writes });
    // Act: 300 requests at once, alternating, then 20 more one by one.
    const replies = await Promise.all(Array.from({ length: 300 }, (_, i) => (i % 2 ? a : b)(apiEvent(), lambdaContext)));
    for (let i = 0; i < 20; i++) replies.push(await (i % 2 ? a : b)(apiEvent(), lambdaContext));
    // Assess: the worst-case overshoot is none. Exactly the limit served (both processes spent every
    // token they claimed), the counter holds what was claimed, and the claims were few.
    const statuses = replies.map((r) => parsed(r).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(100);
    expect(statuses.filter((s) => s === 429)).toHaveLength(220);
    const counter = await getItem<{ n: number }>(keys.rateCounter(keyId, windowAt(now()).index));
    expect(counter?.n).toBe(100);
    expect(writes.n).toBeLessThanOrEqual(100 / 10 + 2);
  });

  it('per request (RATE_LIMIT_MODE=request): holds the combined allowance of two independent instances: limit 10, 20 requests, exactly 10 served', async () => {
    // Prepare: one key, two instances; a fixed clock so all 20 fall in one window.
    const keyId = uuidv7();
    const now = () => Date.UTC(2030, 0, 1, 0, 0, 5);
    const a = instance(keyId, 10, { now, mode: 'request' });
    const b = instance(keyId, 10, { now, mode: 'request' });
    // Act: 20 requests at once, alternating between the two.
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b)(apiEvent(), lambdaContext)));
    // Assess
    const statuses = replies.map((r) => parsed(r).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
    const counter = await getItem<{ n: number; ttl: number }>(keys.rateCounter(keyId, windowAt(now()).index));
    expect(counter).toMatchObject({ n: 10, ttl: Date.UTC(2030, 0, 1, 0, 1, 0) / 1000 + 120 });
    // The served ones saw the shared count: their Remaining values are 9..0, each once.
    const remaining = replies.map((r) => parsed(r)).filter((r) => r.status === 200).map((r) => Number(r.headers['x-ratelimit-remaining']));
    expect(remaining.sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('starts a fresh count in the next window', async () => {
    const keyId = uuidv7();
    let t = Date.UTC(2030, 0, 1, 0, 0, 50);
    const a = instance(keyId, 1, { now: () => t });
    const b = instance(keyId, 1, { now: () => t });
    expect(parsed(await a(apiEvent(), lambdaContext)).status).toBe(200);
    const refused = parsed(await b(apiEvent(), lambdaContext));
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    t += 10_000;
    expect(parsed(await b(apiEvent(), lambdaContext)).status).toBe(200);
  });

  describe('when the table does not answer', () => {
    let server: Server;
    const sockets: import('node:net').Socket[] = [];
    const saved = process.env.DYNAMODB_ENDPOINT;
    beforeAll(async () => {
      // Accepts connections and never answers: a stalled DynamoDB.
      server = createServer((s) => void sockets.push(s));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      process.env.DYNAMODB_ENDPOINT = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(async () => {
      process.env.DYNAMODB_ENDPOINT = saved;
      sockets.forEach((s) => s.destroy());
      await new Promise((resolve) => server.close(resolve));
    });

    it.each(['lease', 'request'])('serves the request uncounted within the time bound (fail open, no 500): %s', async (mode) => {
      let call: Promise<unknown> | undefined;
      const h = instance(uuidv7(), 10, { timeoutMs: 50, mode }, (c) => (call = c));
      // Without the abort the SDK would wait on the socket and this test would time out.
      const r = parsed(await h(apiEvent(), lambdaContext));
      expect(r.status).toBe(200);
      expect(r.headers['x-ratelimit-remaining']).toBeUndefined();
      // The abort also ends the SDK call itself (nothing left running on the stalled socket; a
      // lease claim is let run to ten times the bound, for the requests after this one).
      await expect(call).rejects.toThrow();
    });
  });
});

import { rateLimit } from '../../../shared/http/middleware/rate-limit';
import { stateOf } from '../../../shared/http/context';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('rate-limit', () => {
  it('counts down, then answers 429 with Retry-After, then refills', async () => {
    let now = 0;
    const h = stack(op({ auth: true }), () => ({ statusCode: 200, body: '{}' }),
      { before: (req: any) => { stateOf(req.event).caller = { organizationId: 'o', keyId: 'k', rateLimitPerMinute: 2 }; } },
      rateLimit({ now: () => now, buckets: new Map() }));
    const first = parsed(await h(apiEvent(), lambdaContext));
    const second = parsed(await h(apiEvent(), lambdaContext));
    const third = parsed(await h(apiEvent(), lambdaContext));
    now += 30_000;
    const fourth = parsed(await h(apiEvent(), lambdaContext));
    expect([first.headers['x-ratelimit-remaining'], second.headers['x-ratelimit-remaining']]).toEqual(['1', '0']);
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('30');
    expect(third.headers['x-ratelimit-limit']).toBe('2');
    expect(fourth.status).toBe(200);
  });
});

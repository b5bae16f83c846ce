import { installLocalQueue } from '../../shared/adapters/queue';
import { apiKeyAuth } from '../../shared/http/middleware/auth';
import { authenticate, clearApiKeyCache, flushApiKeyUsage } from '../../shared/domain/api-keys/authenticate';
import { createOrganizationWithKey } from '../../shared/domain/api-keys/provision';
import { logger } from '../../shared/logger';
import { apiEvent, lambdaContext, parsed } from '../support/events';
import { op, stack } from '../unit/http/stack';

/** A queue whose sends settle only after a few timer turns, as SQS over the network does. */
function lateQueue(options: { fail?: boolean; never?: boolean } = {}) {
  const sent: unknown[] = [];
  const settled: unknown[] = [];
  installLocalQueue({
    send: (_queue, body) => {
      sent.push(body);
      if (options.never) return new Promise(() => undefined);
      return new Promise((resolve, reject) =>
        setTimeout(() => {
          settled.push(body);
          if (options.fail) reject(new Error('SQS unavailable'));
          else resolve();
        }, 30),
      );
    },
  });
  return { sent, settled };
}

const handler = (fail = false) =>
  stack(op({ auth: true }), () => {
    if (fail) throw new Error('boom');
    return { statusCode: 200, body: '{}' };
  }, apiKeyAuth());

describe('the API-key last-used stamp', () => {
  let key: string;
  beforeAll(async () => {
    ({ key } = await createOrganizationWithKey({ name: 'stamps' }));
  });
  beforeEach(() => clearApiKeyCache());
  afterAll(() => installLocalQueue(undefined));

  it('is sent completely before the handler returns (Lambda may freeze the process right after)', async () => {
    const q = lateQueue();
    const r = parsed(await handler()(apiEvent({ headers: { 'x-api-key': key } }), lambdaContext));
    expect(r.status).toBe(200);
    expect(q.sent).toHaveLength(1);
    expect(q.settled).toHaveLength(1);
  });

  it('is also sent completely when the request fails', async () => {
    const q = lateQueue();
    const r = parsed(await handler(true)(apiEvent({ headers: { 'x-api-key': key } }), lambdaContext));
    expect(r.status).toBe(500);
    expect(q.settled).toHaveLength(1);
  });

  it('is sent at most once per key per minute per process, even when the key cache is cold', async () => {
    const q = lateQueue();
    const t = Date.now();
    // Each lookup 15 s after the last: the key cache (10 s) has expired every time.
    for (const offset of [0, 15_000, 30_000, 45_000]) await authenticate(key, t + offset);
    expect(q.sent).toHaveLength(1);
    await authenticate(key, t + 61_000);
    expect(q.sent).toHaveLength(2);
    await flushApiKeyUsage();
  });

  it('never fails the request nor holds it beyond its bound when the queue fails or hangs', async () => {
    const warn = jest.spyOn(logger, 'warn').mockImplementation(() => undefined);
    lateQueue({ fail: true });
    expect(parsed(await handler()(apiEvent({ headers: { 'x-api-key': key } }), lambdaContext)).status).toBe(200);
    clearApiKeyCache();
    lateQueue({ never: true });
    expect(parsed(await handler()(apiEvent({ headers: { 'x-api-key': key } }), lambdaContext)).status).toBe(200);
    expect(warn).toHaveBeenCalledWith('could not queue api key usage', expect.anything());
    expect(warn).toHaveBeenCalledWith(expect.stringContaining('still sending'), expect.anything());
    warn.mockRestore();
  });
});

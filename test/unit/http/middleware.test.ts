import middy from '@middy/core';
import * as z from 'zod/mini';
import { requestContext } from '../../../shared/http/middleware/request-context';
import { errorEnvelope } from '../../../shared/http/middleware/error-envelope';
import { jsonBody } from '../../../shared/http/middleware/json-body';
import { apiKeyAuth } from '../../../shared/http/middleware/auth';
import { rateLimit } from '../../../shared/http/middleware/rate-limit';
import { validate } from '../../../shared/http/middleware/validate';
import { successEnvelope, withMessage } from '../../../shared/http/middleware/success-envelope';
import { stateOf } from '../../../shared/http/context';
import { listResult } from '../../../shared/http/result';
import { NotFoundError } from '../../../shared/errors';
import type { Operation } from '../../../shared/http/operation';
import { apiEvent, lambdaContext, parsed } from '../../support/events';

process.env.TABLE_NAME ??= 'unit';
process.env.BUCKET_NAME ??= 'unit';
process.env.LOG_LEVEL = 'SILENT';

const op = (over: Partial<Operation> = {}): Operation => ({
  method: 'POST', path: '/api/v1/test', operationId: 'test', summary: 't', tag: 't', entry: 'x', auth: false, access: {}, ...over,
});

/** A handler with the outer pair every stack has, plus the middleware under test. */
function stack(operation: Operation, fn: (event: any) => unknown, ...extra: any[]) {
  const h = middy(async (event: any) => fn(event) as any).use(requestContext(operation)).use(errorEnvelope());
  extra.forEach((m) => h.use(m));
  return h;
}

describe('request-context', () => {
  it('stamps X-Request-Id on success and on error, echoing a safe caller id', async () => {
    // Prepare
    const ok = stack(op(), () => ({ statusCode: 200, body: '{}' }));
    const fail = stack(op(), () => { throw new NotFoundError('Thing', 'x'); });
    // Act
    const a = parsed(await ok(apiEvent({ headers: { 'x-request-id': 'abc-123' } }), lambdaContext));
    const b = parsed(await fail(apiEvent({ headers: { 'x-request-id': 'bad id with spaces' } }), lambdaContext));
    // Assess
    expect(a.headers['x-request-id']).toBe('abc-123');
    expect(b.headers['x-request-id']).toBe('req-test-1');
    expect(b.status).toBe(404);
  });
});

describe('error-envelope', () => {
  it('maps typed errors to their status and code, unknown ones to a bare 500', async () => {
    const typed = stack(op(), () => { throw new NotFoundError('Agent', 'a1'); });
    const unknown = stack(op(), () => { throw new Error('secret internals'); });
    const t = parsed(await typed(apiEvent(), lambdaContext));
    const u = parsed(await unknown(apiEvent(), lambdaContext));
    expect(t.body).toEqual({ success: false, message: 'Agent a1 not found', error: { code: 'NOT_FOUND', message: 'Agent a1 not found', details: { resource: 'Agent', id: 'a1' } } });
    expect(u.status).toBe(500);
    expect(u.body.error.code).toBe('INTERNAL');
    expect(JSON.stringify(u.body)).not.toContain('secret internals');
    expect(u.body.error.details.request_id).toBe('req-test-1');
  });
});

describe('json-body', () => {
  const h = stack(op(), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).body ?? null) }), jsonBody({ maxBytes: 64 }));
  it('parses JSON bodies', async () => {
    const r = parsed(await h(apiEvent({ headers: { 'content-type': 'application/json' }, body: { a: 1 } }), lambdaContext));
    expect(r.body).toEqual({ a: 1 });
  });
  it.each([
    ['malformed JSON', { 'content-type': 'application/json' }, '{"a":', 400, 'body'],
    ['wrong content type', { 'content-type': 'text/plain' }, '{}', 400, 'content-type'],
  ])('rejects %s', async (_name, headers, body, status, path) => {
    const r = parsed(await h(apiEvent({ headers, body }), lambdaContext));
    expect(r.status).toBe(status);
    expect(r.body.error.details.fields[0].path).toBe(path);
  });
  it('answers 413 above the limit', async () => {
    const r = parsed(await h(apiEvent({ headers: { 'content-type': 'application/json' }, body: { text: 'x'.repeat(100) } }), lambdaContext));
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});

describe('api-key-auth', () => {
  const lookup = async (key: string) => (key === 'good' ? { organizationId: 'org-1', keyId: 'k1' } : null);
  const h = stack(op({ auth: true }), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).caller) }), apiKeyAuth({ lookup }));
  it('lets a known key through with its organization', async () => {
    const r = parsed(await h(apiEvent({ headers: { 'X-Api-Key': 'good' } }), lambdaContext));
    expect(r.body.organizationId).toBe('org-1');
  });
  it.each([[{}], [{ 'x-api-key': 'bad' }]])('answers 401 for %j', async (headers) => {
    const r = parsed(await h(apiEvent({ headers }), lambdaContext));
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('UNAUTHORIZED');
  });
});

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

describe('validate', () => {
  const operation = op({
    params: z.strictObject({ id: z.string().check(z.regex(/^\d+$/)) }),
    query: z.strictObject({ q: z.optional(z.string()) }),
    body: z.strictObject({ name: z.string(), schedule: z.optional(z.strictObject({ max_concurrent: z.int().check(z.minimum(1)) })) }),
  });
  const h = stack(operation, (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).input) }), jsonBody(), validate());
  it('names every offending field, unknown ones included', async () => {
    const r = parsed(await h(apiEvent({
      pathParameters: { id: 'abc' }, query: { q: 'x', extra: '1' },
      headers: { 'content-type': 'application/json' }, body: { schedule: { max_concurrent: 0 }, bogus: true },
    }), lambdaContext));
    expect(r.status).toBe(400);
    const paths = r.body.error.details.fields.map((f: any) => `${f.in}:${f.path}`).sort();
    expect(paths).toEqual(['body:bogus', 'body:name', 'body:schedule.max_concurrent', 'path:id', 'query:extra']);
    expect(r.body.error.details.fields.find((f: any) => f.path === 'name').message).toBe('is required');
  });
  it('passes parsed input on', async () => {
    const r = parsed(await h(apiEvent({ pathParameters: { id: '7' }, headers: { 'content-type': 'application/json' }, body: { name: 'n' } }), lambdaContext));
    expect(r.body).toEqual({ params: { id: '7' }, query: {}, body: { name: 'n' } });
  });
});

describe('success-envelope', () => {
  it('wraps data, lists with meta, deletions without data, and custom messages', async () => {
    const get = stack(op({ method: 'GET' }), () => ({ id: 1 }), successEnvelope());
    const list = stack(op({ method: 'GET' }), () => listResult({ items: [1, 2], nextCursor: 'c' }, 7, { limit: 2, offset: 0 }), successEnvelope());
    const del = stack(op({ method: 'DELETE' }), () => undefined, successEnvelope());
    const custom = stack(op({ method: 'POST' }), () => withMessage('Campaign started', { id: 2 }), successEnvelope());
    expect(parsed(await get(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Retrieved successfully', data: { id: 1 } });
    expect(parsed(await list(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Retrieved successfully', data: [1, 2], meta: { total: 7, limit: 2, offset: 0, next_cursor: 'c' } });
    expect(parsed(await del(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Deleted successfully' });
    expect(parsed(await custom(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Campaign started', data: { id: 2 } });
  });
});

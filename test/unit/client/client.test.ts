/**
 * The client's own layer against a scripted fetch: headers, typed errors, paging, idempotency
 * keys and retries (waits recorded, never slept). The same client against the real API is
 * test/acceptance/client-flows.test.ts.
 */
import { Webhook } from 'standardwebhooks';
import { ApiError, createClient, parseRetryAfter, retryDelay, verifyWebhook, WebhookVerificationError, type RetryOptions } from '../../../client/src/index';

interface Sent {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
}

/** A fetch that answers from a script (one answer per request; the last repeats) and records what was sent. */
function scripted(...answers: (() => Response)[]) {
  const sent: Sent[] = [];
  const fetch = async (request: Request) => {
    sent.push({ method: request.method, url: new URL(request.url), headers: request.headers, body: await request.text() });
    return (answers[Math.min(sent.length - 1, answers.length - 1)] as () => Response)();
  };
  return { sent, fetch };
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => () =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', 'x-request-id': 'req-1', ...headers } });
const ok = (data: unknown, meta?: unknown) => json(200, { success: true, message: 'ok', data, ...(meta ? { meta } : {}) });
const failure = (status: number, code: string, details: object = {}, headers: Record<string, string> = {}) =>
  json(status, { success: false, message: `${code} happened`, error: { code, message: `${code} happened`, details } }, headers);

/** Retries that record their waits instead of sleeping; jitter at its largest. */
function noSleep(extra: RetryOptions = {}) {
  const waits: number[] = [];
  const retry: RetryOptions = { sleep: async (ms) => void waits.push(ms), random: () => 0.999, ...extra };
  return { waits, retry };
}

const agent = { id: '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90', name: 'Front desk' };

describe('client: requests and answers', () => {
  it('sends X-Api-Key and JSON, and resolves to the envelope data (undefined for a deletion)', async () => {
    // Prepare
    const { sent, fetch } = scripted(ok(agent), json(200, { success: true, message: 'Agent deleted successfully' }));
    const api = createClient({ baseUrl: 'http://api.test/', apiKey: 'vap_key', fetch });
    // Act
    const created = await api.post('/api/v1/agents', { body: { name: 'Front desk' } });
    const deleted = await api.delete('/api/v1/agents/{id}', { params: { path: { id: agent.id } } });
    // Assess
    expect(created).toEqual(agent);
    expect(deleted).toBeUndefined();
    expect(sent[0]).toMatchObject({ method: 'POST', body: '{"name":"Front desk"}' });
    expect(sent[0]!.url.href).toBe('http://api.test/api/v1/agents');
    expect(sent[0]!.headers.get('x-api-key')).toBe('vap_key');
    expect(sent[0]!.headers.get('content-type')).toBe('application/json');
    expect(sent[0]!.headers.has('idempotency-key')).toBe(false);
    expect(sent[1]!.url.pathname).toBe(`/api/v1/agents/${agent.id}`);
  });

  it('sends idempotencyKey as Idempotency-Key on a POST', async () => {
    const { sent, fetch } = scripted(ok(agent));
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch });
    await api.post('/api/v1/agents', { body: { name: 'x' }, idempotencyKey: 'order-42' });
    expect(sent[0]!.headers.get('idempotency-key')).toBe('order-42');
  });

  it('throws ApiError with status, code, message, details and request id for every answer outside 2xx', async () => {
    const fields = [{ path: 'name', message: 'is required', in: 'body' }];
    const { fetch } = scripted(failure(400, 'VALIDATION_ERROR', { fields }));
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch });
    const error = await api.post('/api/v1/agents', { body: { name: '' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ name: 'ApiError', status: 400, code: 'VALIDATION_ERROR', message: 'VALIDATION_ERROR happened', details: { fields }, requestId: 'req-1', method: 'POST', url: 'http://api.test/api/v1/agents' });
    expect((error as ApiError).fields).toEqual(fields);
  });

  it('throws ApiError from the raw openapi-fetch methods too, and names an answer without an envelope HTTP_<status>', async () => {
    const { fetch } = scripted(() => new Response('Bad Gateway', { status: 502 }));
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch });
    const error = await api.GET('/api/v1/agents/{id}', { params: { path: { id: agent.id } } }).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 502, code: 'HTTP_502', message: 'Bad Gateway', details: {} });
  });
});

describe('client: paging', () => {
  it('iterates every item by next_cursor, keeping the filters and dropping the offset after the first page', async () => {
    // Prepare
    const meta = (next: string | null) => ({ total: 5, limit: 2, offset: 0, next_cursor: next });
    const { sent, fetch } = scripted(ok([{ id: 'a' }, { id: 'b' }], meta('c1')), ok([{ id: 'c' }, { id: 'd' }], meta('c2')), ok([{ id: 'e' }], meta(null)));
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch });
    // Act
    const ids: string[] = [];
    for await (const call of api.paginate('/api/v1/calls', { params: { query: { limit: 2, offset: 1, status: 'ended' } } })) ids.push(call.id);
    // Assess
    expect(ids).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(sent.map((s) => s.url.search)).toEqual(['?limit=2&offset=1&status=ended', '?limit=2&status=ended&cursor=c1', '?limit=2&status=ended&cursor=c2']);
  });

  it('answers one page with its meta', async () => {
    const { fetch } = scripted(ok([{ id: 'a' }], { total: 1, limit: 20, offset: 0, next_cursor: null }));
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch });
    expect(await api.page('/api/v1/contacts')).toEqual({ data: [{ id: 'a' }], meta: { total: 1, limit: 20, offset: 0, next_cursor: null } });
  });
});

describe('client: retries', () => {
  it('retries a 429 after Retry-After (seconds) plus jitter, then answers', async () => {
    const { sent, fetch } = scripted(failure(429, 'RATE_LIMITED', {}, { 'retry-after': '3' }), ok(agent));
    const { waits, retry } = noSleep();
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch, retry });
    // A POST without a key is retried on 429: the API refused it before anything ran.
    expect(await api.post('/api/v1/agents', { body: { name: 'x' } })).toEqual(agent);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.body).toBe('{"name":"x"}');
    expect(waits[0]).toBeGreaterThanOrEqual(3000);
    expect(waits[0]).toBeLessThan(3500);
  });

  it('backs off exponentially with full jitter on 503, capped, and gives up after maxAttempts with the last error', async () => {
    const { sent, fetch } = scripted(failure(503, 'UNAVAILABLE'));
    const { waits, retry } = noSleep({ maxAttempts: 5, baseDelayMs: 100, maxDelayMs: 500 });
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch, retry });
    await expect(api.get('/api/v1/agents')).rejects.toMatchObject({ status: 503, code: 'UNAVAILABLE' });
    expect(sent).toHaveLength(5);
    expect(waits).toEqual([99, 199, 399, 499]);
  });

  it('retries a POST on 503 only when it carries an Idempotency-Key', async () => {
    const without = scripted(failure(503, 'UNAVAILABLE'), ok(agent));
    const api1 = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch: without.fetch, retry: noSleep().retry });
    await expect(api1.post('/api/v1/agents', { body: { name: 'x' } })).rejects.toMatchObject({ status: 503 });
    expect(without.sent).toHaveLength(1);

    const withKey = scripted(failure(503, 'UNAVAILABLE'), ok(agent));
    const api2 = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch: withKey.fetch, retry: noSleep().retry });
    expect(await api2.post('/api/v1/agents', { body: { name: 'x' }, idempotencyKey: 'k1' })).toEqual(agent);
    expect(withKey.sent.map((s) => s.headers.get('idempotency-key'))).toEqual(['k1', 'k1']);
  });

  it.each([400, 401, 404, 409, 422, 500, 502])('never retries a %i', async (status) => {
    const { sent, fetch } = scripted(failure(status, 'X'), ok(agent));
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch, retry: noSleep().retry });
    await expect(api.get('/api/v1/agents')).rejects.toMatchObject({ status });
    expect(sent).toHaveLength(1);
  });

  it('does not wait for a Retry-After beyond maxRetryAfterMs, and retry: false sends once', async () => {
    const far = scripted(failure(429, 'RATE_LIMITED', {}, { 'retry-after': '120' }), ok(agent));
    const api = createClient({ baseUrl: 'http://api.test', apiKey: 'k', fetch: far.fetch, retry: noSleep().retry });
    await expect(api.get('/api/v1/agents')).rejects.toMatchObject({ status: 429, retryAfterSeconds: 120 });
    expect(far.sent).toHaveLength(1);

    const off = scripted(failure(429, 'RATE_LIMITED', {}, { 'retry-after': '1' }), ok(agent));
    await expect(createClient({ baseUrl: 'http://api.test', fetch: off.fetch, retry: false }).get('/api/v1/agents')).rejects.toMatchObject({ status: 429 });
    expect(off.sent).toHaveLength(1);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2031-01-01T00:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('Wed, 01 Jan 2031 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Tue, 31 Dec 2030 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
    const dated = new Response(null, { status: 503, headers: { 'retry-after': 'Wed, 01 Jan 2031 00:00:02 GMT' } });
    expect(retryDelay(dated, 1, { random: () => 0 }, now)).toBe(2000);
  });
});

describe('verifyWebhook', () => {
  const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
  const event = { id: '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90', type: 'ping', created_at: '2031-01-01T00:00:00.000Z', organization_id: 'o', data: {} };
  const body = JSON.stringify(event);
  const signed = () => {
    const at = new Date();
    return { 'webhook-id': event.id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign(event.id, at, body) };
  };

  it('returns the event for a signed delivery, from Node-style, fetch-style or raw-byte input', () => {
    const headers = signed();
    const nodeStyle = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect(verifyWebhook(body, nodeStyle, secret)).toEqual(event);
    expect(verifyWebhook(new TextEncoder().encode(body), new Headers(headers), secret)).toEqual(event);
  });

  it('throws WebhookVerificationError for another secret, a changed body or a missing header', () => {
    const headers = signed();
    expect(() => verifyWebhook(body, headers, `whsec_${Buffer.alloc(32, 8).toString('base64')}`)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(`${body} `, headers, secret)).toThrow(WebhookVerificationError);
    expect(() => verifyWebhook(body, { ...headers, 'webhook-id': undefined }, secret)).toThrow(WebhookVerificationError);
  });
});

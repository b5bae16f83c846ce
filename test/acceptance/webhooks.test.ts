/**
 * Black-box: webhooks over real HTTP against the local runtime, with a receiver on loopback.
 * Every delivery is checked with the Standard Webhooks library itself (`standardwebhooks`).
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';
import { startWebhookReceiver, verifyDelivery, type Received, type WebhookReceiver } from '../support/webhook-receiver';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

let slot = 0;
/** Books a 15-minute appointment at a time no other booking of this file uses. */
async function book(key = keyA) {
  const agentId = (await api('POST', '/api/v1/agents', { key, body: { name: 'Booker' } })).body.data.id;
  const start = new Date(Date.UTC(2032, 0, 5, 9, 0) + slot++ * 30 * 60_000).toISOString();
  const res = await api('POST', '/api/v1/scheduler/appointments', { key, body: { agent_id: agentId, start_time: start, duration_minutes: 15, attendee_name: 'Ada Lovelace' } });
  expect(res.status).toBe(200);
  return res.body.data;
}

async function endpoint(path: string, body: object = {}, key = keyA) {
  const res = await api('POST', '/api/v1/webhooks', { key, body: { url: `${receiver.url}${path}`, events: ['*'], ...body } });
  expect(res.status).toBe(200);
  return res.body.data as { id: string; secret: string; url: string };
}

const at = (path: string, type?: string) => (r: Received) => r.path === path && (!type || JSON.parse(r.body).type === type);
const idle = () => local().platform.queue.waitForIdle(20_000);

describe('webhook endpoints', () => {
  it('creates an endpoint with a whsec_ secret shown once, lists and reads it without the secret', async () => {
    const created = await endpoint('/crud', { events: ['appointment.booked'], description: 'CRM' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(created).toMatchObject({ events: ['appointment.booked'], description: 'CRM', enabled: true, previous_secret_expires_at: null });

    const got = await api('GET', `/api/v1/webhooks/${created.id}`);
    expect(got.body.data).toEqual({ ...created, secret: undefined });
    expect(JSON.stringify(got.body)).not.toContain('secret"');
    const list = await api('GET', '/api/v1/webhooks');
    expect(list.body.meta.total).toBeGreaterThanOrEqual(1);
    expect(list.body.data.find((w: { id: string }) => w.id === created.id)).not.toHaveProperty('secret');

    const patched = await api('PATCH', `/api/v1/webhooks/${created.id}`, { body: { enabled: false, events: ['appointment.cancelled', 'appointment.booked'] } });
    expect(patched.body.data).toMatchObject({ enabled: false, events: ['appointment.cancelled', 'appointment.booked'] });
    expect((await api('DELETE', `/api/v1/webhooks/${created.id}`)).status).toBe(200);
    expect((await api('GET', `/api/v1/webhooks/${created.id}`)).status).toBe(404);
  });

  it.each([
    ['a link-local address', 'http://169.254.10.20/hook'],
    ['the metadata address', 'http://169.254.169.254/latest/meta-data'],
    ['a private address', 'http://10.0.0.8/hook'],
    ['a non-http scheme', 'ftp://example.com/hook'],
    ['not a URL', 'hook'],
  ])('refuses %s with a 400 naming url', async (_, url) => {
    const res = await api('POST', '/api/v1/webhooks', { body: { url, events: ['*'] } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields[0].path).toBe('url');
  });

  it('refuses an events filter mixing "*" with kinds, or naming an unknown kind', async () => {
    for (const events of [['*', 'ping'], ['call.exploded'], []]) {
      const res = await api('POST', '/api/v1/webhooks', { body: { url: `${receiver.url}/x`, events } });
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields[0].path).toMatch(/^events/);
    }
  });
});

describe('deliveries', () => {
  it('test sends a signed ping that standardwebhooks verifies, and answers the attempt', async () => {
    const hook = await endpoint('/ping');
    const res = await api('POST', `/api/v1/webhooks/${hook.id}/test`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ webhook_id: hook.id, event_type: 'ping', attempt: 1, status_code: 200, succeeded: true, error: null, trigger: 'test' });

    const [delivery] = await receiver.waitFor(1, at('/ping'));
    const event = verifyDelivery(hook.secret, delivery!) as { id: string; type: string };
    expect(event).toMatchObject({ id: res.body.data.event_id, type: 'ping', organization_id: local().platform.keys[0]!.organizationId });
    expect(delivery!.headers).toMatchObject({ 'webhook-id': event.id, 'content-type': 'application/json' });
    expect(delivery!.headers['user-agent']).toMatch(/VoiceAgentPlatform-Webhooks/);
    // The body is the stored event, byte for byte.
    const stored = await api('GET', `/api/v1/events/${event.id}`);
    expect(stored.body.data).toEqual(JSON.parse(delivery!.body));
    expect(() => verifyDelivery(`whsec_${Buffer.alloc(32, 1).toString('base64')}`, delivery!)).toThrow();
  });

  it('delivers appointment.booked when a booking is made', async () => {
    const hook = await endpoint('/booked', { events: ['appointment.booked'] });
    const appointment = await book();
    const [delivery] = await receiver.waitFor(1, at('/booked'));
    const event = verifyDelivery(hook.secret, delivery!) as { id: string; type: string; data: { id: string } };
    expect(event.type).toBe('appointment.booked');
    expect(event.data).toMatchObject({ id: appointment.id, status: 'accepted', start_time: appointment.start_time });

    const listed = await api('GET', '/api/v1/events?type=appointment.booked');
    expect(listed.body.data.map((e: { id: string }) => e.id)).toContain(event.id);
    await idle();
    const log = await api('GET', `/api/v1/webhooks/${hook.id}/deliveries`);
    expect(log.body.data).toEqual([expect.objectContaining({ event_id: event.id, attempt: 1, succeeded: true, status_code: 200, trigger: 'automatic' })]);
  });

  it('retries a 500 after about 5 s (scaled) with the same webhook-id; the log shows both attempts', async () => {
    const hook = await endpoint('/flaky', { events: ['appointment.booked'] });
    // Other endpoints of this organization get the same booking: fail only this one.
    receiver.answerOn('/flaky', 500);
    await book();
    const [first, second] = await receiver.waitFor(2, at('/flaky'));
    expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
    expect(second!.body).toBe(first!.body);
    verifyDelivery(hook.secret, first!);
    verifyDelivery(hook.secret, second!);
    // 5 s × the test platform's queue time scale (0.01) = 50 ms.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(40);
    await idle();
    const log = await api('GET', `/api/v1/webhooks/${hook.id}/deliveries`);
    expect(log.body.meta.total).toBe(2);
    expect(log.body.data).toEqual([
      expect.objectContaining({ attempt: 2, status_code: 200, succeeded: true, error: null }),
      expect.objectContaining({ attempt: 1, status_code: 500, succeeded: false, error: 'HTTP 500' }),
    ]);
    const failed = await api('GET', `/api/v1/webhooks/${hook.id}/deliveries?succeeded=false`);
    expect(failed.body.data.map((d: { attempt: number }) => d.attempt)).toEqual([1]);
    expect(failed.body.meta.total).toBe(1);
  });

  it('redeliver sends the same event again with the same webhook-id and answers the new attempt', async () => {
    const hook = await endpoint('/again', { events: ['appointment.booked'] });
    await book();
    const [original] = await receiver.waitFor(1, at('/again'));
    await idle();
    const [first] = (await api('GET', `/api/v1/webhooks/${hook.id}/deliveries`)).body.data;
    const res = await api('POST', `/api/v1/webhooks/${hook.id}/deliveries/${first.id}/redeliver`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ event_id: first.event_id, attempt: 2, succeeded: true, trigger: 'redeliver' });
    const [, again] = await receiver.waitFor(2, at('/again'));
    expect(again!.headers['webhook-id']).toBe(original!.headers['webhook-id']);
    expect(again!.body).toBe(original!.body);
    verifyDelivery(hook.secret, again!);
  });

  it('counts a redirect as a failure and does not follow it', async () => {
    const hook = await endpoint('/moved');
    receiver.answerOn('/moved', 302);
    const res = await api('POST', `/api/v1/webhooks/${hook.id}/test`);
    expect(res.body.data).toMatchObject({ status_code: 302, succeeded: false });
    expect(receiver.received.filter((r) => r.path === '/elsewhere')).toHaveLength(0);
  });

  it('after rotate-secret, deliveries verify with both the old and the new secret', async () => {
    const hook = await endpoint('/rotated');
    const rotated = await api('POST', `/api/v1/webhooks/${hook.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.secret).toMatch(/^whsec_/);
    expect(rotated.body.data.secret).not.toBe(hook.secret);
    expect(Date.parse(rotated.body.data.previous_secret_expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect((await api('GET', `/api/v1/webhooks/${hook.id}`)).body.data).not.toHaveProperty('secret');

    await api('POST', `/api/v1/webhooks/${hook.id}/test`);
    const [delivery] = await receiver.waitFor(1, at('/rotated'));
    expect(String(delivery!.headers['webhook-signature']).split(' ')).toHaveLength(2);
    verifyDelivery(rotated.body.data.secret, delivery!);
    verifyDelivery(hook.secret, delivery!);
  });

  it('a disabled endpoint receives nothing', async () => {
    const hook = await endpoint('/off', { events: ['appointment.booked'] });
    await api('PATCH', `/api/v1/webhooks/${hook.id}`, { body: { enabled: false } });
    await book();
    await idle();
    expect(receiver.received.filter(at('/off'))).toHaveLength(0);
    expect((await api('GET', `/api/v1/webhooks/${hook.id}/deliveries`)).body.meta.total).toBe(0);
  });
});

describe('tenant isolation', () => {
  it('another organization gets 404 for the endpoint, its deliveries, redeliver, test, rotate and the events', async () => {
    const hook = await endpoint('/mine');
    const test = await api('POST', `/api/v1/webhooks/${hook.id}/test`);
    const other = { key: keyB };
    for (const [method, path] of [
      ['GET', `/api/v1/webhooks/${hook.id}`],
      ['PATCH', `/api/v1/webhooks/${hook.id}`],
      ['DELETE', `/api/v1/webhooks/${hook.id}`],
      ['GET', `/api/v1/webhooks/${hook.id}/deliveries`],
      ['POST', `/api/v1/webhooks/${hook.id}/deliveries/${test.body.data.id}/redeliver`],
      ['POST', `/api/v1/webhooks/${hook.id}/test`],
      ['POST', `/api/v1/webhooks/${hook.id}/rotate-secret`],
      ['GET', `/api/v1/events/${test.body.data.event_id}`],
    ] as const) {
      const res = await api(method, path, { ...other, ...(method === 'PATCH' ? { body: { enabled: false } } : {}) });
      expect([method, path, res.status]).toEqual([method, path, 404]);
    }
    const theirs = await api('GET', '/api/v1/events?type=ping', other);
    expect(theirs.body.data.map((e: { id: string }) => e.id)).not.toContain(test.body.data.event_id);
    expect((await api('GET', '/api/v1/webhooks', other)).body.data.map((w: { id: string }) => w.id)).not.toContain(hook.id);
    // Still intact for its owner.
    expect((await api('GET', `/api/v1/webhooks/${hook.id}`)).body.data.enabled).toBe(true);
  });
});

describe('events', () => {
  it('lists newest first with type, from and to filters and cursor pagination', async () => {
    const a = await book();
    const b = await book();
    await api('POST', `/api/v1/scheduler/appointments/${b.id}/cancel`, { body: { reason: 'No longer needed' } });
    const all = (await api('GET', '/api/v1/events?limit=100')).body;
    const times = all.data.map((e: { created_at: string }) => e.created_at);
    expect(times).toEqual([...times].sort().reverse());
    const cancelled = (await api('GET', '/api/v1/events?type=appointment.cancelled')).body.data;
    expect(cancelled[0]).toMatchObject({ type: 'appointment.cancelled', data: { id: b.id, status: 'cancelled', cancellation_reason: 'No longer needed' } });

    const booked = all.data.filter((e: { type: string; data: { id: string } }) => e.type === 'appointment.booked' && [a.id, b.id].includes(e.data.id));
    const from = booked[1].created_at;
    const to = booked[0].created_at;
    const ranged = (await api('GET', `/api/v1/events?type=appointment.booked&from=${from}&to=${to}`)).body;
    expect(ranged.data.map((e: { data: { id: string } }) => e.data.id)).toEqual([b.id, a.id]);
    expect(ranged.meta.total).toBe(2);

    const page1 = (await api('GET', '/api/v1/events?limit=2')).body;
    const page2 = (await api('GET', `/api/v1/events?limit=2&cursor=${page1.meta.next_cursor}`)).body;
    expect(page2.data[0].id < page1.data[1].id).toBe(true);
    expect((await api('GET', '/api/v1/events?from=2031-01-02T00:00:00Z&to=2031-01-01T00:00:00Z')).status).toBe(400);
  });
});

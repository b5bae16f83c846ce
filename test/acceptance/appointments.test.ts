/**
 * Black-box: appointments over real HTTP, with the built-in calendar and then with Cal.com
 * connected (a local server speaking Cal.com v2's documented shapes).
 */
import { createHmac } from 'node:crypto';
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { startFakeCalcom, type FakeCalcom } from '../support/fake-calcom';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

async function agent(key = keyA): Promise<string> {
  return (await api('POST', '/api/v1/agents', { key, body: { name: 'Scheduler' } })).body.data.id;
}
const book = (body: object, key = keyA) => api('POST', '/api/v1/scheduler/appointments', { key, body });
const attendee = { attendee_name: 'Ada Lovelace', attendee_email: 'ada@example.com', attendee_timezone: 'Europe/London' };

describe('built-in calendar', () => {
  it('offers, books, reschedules and cancels; the contact timeline and stats follow', async () => {
    const agentId = await agent();
    const contact = (await api('POST', '/api/v1/contacts', { body: { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com' } })).body.data;
    const slots = await api('GET', `/api/v1/scheduler/availability?agent_id=${agentId}&start=2031-06-02&end=2031-06-02&duration_minutes=30&timezone=Europe/Berlin`);
    expect(slots.status).toBe(200);
    expect(slots.body.data.slots[0]).toEqual({ start: '2031-06-02T00:00:00+02:00', end: '2031-06-02T00:30:00+02:00' });
    expect(slots.body.data.slots).toHaveLength(24 * 4 - 1);

    const booked = await book({ agent_id: agentId, contact_id: contact.id, start_time: '2031-06-02T10:00:00+02:00', duration_minutes: 30, attendee_timezone: 'Europe/Berlin' });
    expect(booked.status).toBe(200);
    expect(booked.body.data).toMatchObject({ status: 'accepted', start_time: '2031-06-02T08:00:00.000Z', end_time: '2031-06-02T08:30:00.000Z', attendee_name: 'Ada Lovelace', attendee_email: 'ada@example.com', scheduler_booking_uid: '', provider: 'builtin' });
    const id = booked.body.data.id;

    const after = await api('GET', `/api/v1/scheduler/availability?agent_id=${agentId}&start=2031-06-02T07:00:00Z&end=2031-06-02T09:00:00Z&duration_minutes=30`);
    expect(after.body.data.slots.map((s: any) => s.start)).toEqual(['2031-06-02T07:00:00Z', '2031-06-02T07:15:00Z', '2031-06-02T07:30:00Z', '2031-06-02T08:30:00Z']);
    expect((await book({ agent_id: agentId, start_time: '2031-06-02T08:15:00Z', duration_minutes: 15, ...attendee })).body.error.code).toBe('UNPROCESSABLE');

    const moved = await api('POST', `/api/v1/scheduler/appointments/${id}/reschedule`, { body: { start_time: '2031-06-02T08:15:00Z', duration_minutes: 45 } });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ status: 'accepted', rescheduled_from: id, end_time: '2031-06-02T09:00:00.000Z' });
    expect((await api('GET', `/api/v1/scheduler/appointments/${id}`)).body.data).toMatchObject({ status: 'rescheduled', rescheduled_to: moved.body.data.id });
    // The old 08:00 slot is free again; the new one is not.
    expect((await book({ agent_id: agentId, start_time: '2031-06-02T08:00:00Z', duration_minutes: 15, ...attendee })).status).toBe(200);
    expect((await book({ agent_id: agentId, start_time: '2031-06-02T08:30:00Z', duration_minutes: 15, ...attendee })).status).toBe(422);

    const cancelled = await api('POST', `/api/v1/scheduler/appointments/${moved.body.data.id}/cancel`, { body: { reason: 'Travelling' } });
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', cancellation_reason: 'Travelling' });
    expect((await book({ agent_id: agentId, start_time: '2031-06-02T08:30:00Z', duration_minutes: 15, ...attendee })).status).toBe(200);
    expect((await api('POST', `/api/v1/scheduler/appointments/${moved.body.data.id}/cancel`, { body: {} })).status).toBe(409);

    await api('POST', `/api/v1/contacts/${contact.id}/notes`, { body: { content: 'Wants a demo' } });
    const timeline = (await api('GET', `/api/v1/contacts/${contact.id}/activities`)).body.data;
    expect(timeline.map((a: any) => a.type)).toEqual(['appointment', 'appointment', 'appointment', 'note']);
    expect(timeline[0].description).toMatch(/booked/);
    expect(timeline[1].description).toMatch(/rescheduled/);
    expect(timeline[2].description).toMatch(/cancelled: Travelling/);
    expect((await api('GET', `/api/v1/contacts/${contact.id}/stats`)).body.data).toMatchObject({ appointments: 1, notes: 1 });

    const list = await api('GET', `/api/v1/scheduler/appointments?agent_id=${agentId}&status=accepted`);
    expect(list.body.meta.total).toBe(2);
    const ranged = await api('GET', `/api/v1/scheduler/appointments?from=2031-06-02T08:00:00Z&to=2031-06-02T08:10:00Z&agent_id=${agentId}`);
    expect(ranged.body.data.map((a: any) => a.start_time)).toEqual(['2031-06-02T08:00:00.000Z', '2031-06-02T08:00:00.000Z']);
  });

  it('never double-books an agent: six simultaneous bookings of one slot give one booking and five 422s', async () => {
    const agentId = await agent();
    const replies = await Promise.all(
      Array.from({ length: 6 }, (_, i) => book({ agent_id: agentId, start_time: `2031-07-01T10:${i % 2 ? '15' : '00'}:00Z`, duration_minutes: 30, ...attendee })),
    );
    expect(replies.map((r) => r.status).sort()).toEqual([200, 422, 422, 422, 422, 422]);
    const list = await api('GET', `/api/v1/scheduler/appointments?agent_id=${agentId}`);
    expect(list.body.meta.total).toBe(1);
  });

  it('honours working hours across a DST change', async () => {
    const agentId = await agent();
    const hours = await api('PUT', `/api/v1/scheduler/working-hours/${agentId}`, { body: { days: [0, 1, 2, 3, 4, 5, 6], start: '09:00', end: '10:00', timezone: 'America/New_York' } });
    expect(hours.body.data).toMatchObject({ configured: true, timezone: 'America/New_York' });
    // 2031-03-09 is the day New York moves to daylight time: 09:00 local is 13:00Z, the day before 14:00Z.
    const before = await api('GET', `/api/v1/scheduler/availability?agent_id=${agentId}&start=2031-03-08&end=2031-03-09&duration_minutes=60&timezone=America/New_York`);
    expect(before.body.data.slots.map((s: any) => s.start)).toEqual(['2031-03-08T09:00:00-05:00', '2031-03-09T09:00:00-04:00']);
    expect((await book({ agent_id: agentId, start_time: '2031-03-09T14:00:00Z', duration_minutes: 30, ...attendee })).status).toBe(422);
    expect((await book({ agent_id: agentId, start_time: '2031-03-09T13:00:00Z', duration_minutes: 30, ...attendee })).status).toBe(200);
  });

  it.each([
    ['agent_id', { start_time: '2031-01-01T10:00:00Z', duration_minutes: 30, agent_id: '0190a0a0-0000-7000-8000-000000000000' }],
    ['contact_id', { start_time: '2031-01-01T10:00:00Z', duration_minutes: 30, contact_id: '0190a0a0-0000-7000-8000-000000000000' }],
    ['attendee_timezone', { start_time: '2031-01-01T10:00:00Z', duration_minutes: 30, attendee_timezone: 'Nowhere/Land' }],
    ['attendee_phone', { start_time: '2031-01-01T10:00:00Z', duration_minutes: 30, attendee_phone: 'abc' }],
    ['attendee_email', { start_time: '2031-01-01T10:00:00Z', duration_minutes: 30, attendee_email: 'x@' }],
    ['start_time', { start_time: 'tomorrow', duration_minutes: 30 }],
    ['duration_minutes', { start_time: '2031-01-01T10:00:00Z', duration_minutes: 7 }],
  ])('answers a bad %s with a 4xx naming it', async (field, body) => {
    const agentId = await agent();
    const res = await book({ agent_id: agentId, attendee_name: 'X', ...body });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(field);
  });

  it('refuses end before start and a bad time zone in availability', async () => {
    const agentId = await agent();
    const backwards = await api('GET', `/api/v1/scheduler/availability?agent_id=${agentId}&start=2031-01-02T10:00:00Z&end=2031-01-02T09:00:00Z&duration_minutes=30`);
    expect(backwards.status).toBe(400);
    expect(backwards.body.error.details.fields[0].path).toBe('end');
    const tz = await api('GET', `/api/v1/scheduler/availability?agent_id=${agentId}&start=2031-01-02&end=2031-01-03&duration_minutes=30&timezone=Mars/Base`);
    expect(tz.body.error.details.fields[0].path).toBe('timezone');
  });

  it('hides appointments from other organizations, also through org_id', async () => {
    const agentId = await agent();
    const booked = await book({ agent_id: agentId, start_time: '2031-08-01T10:00:00Z', duration_minutes: 30, ...attendee });
    const id = booked.body.data.id;
    const orgId = booked.body.data.organization_id;
    expect((await api('GET', `/api/v1/scheduler/appointments/${id}?org_id=${orgId}`)).status).toBe(200);
    expect((await api('GET', `/api/v1/scheduler/appointments/${id}?org_id=0190a0a0-0000-7000-8000-000000000000`)).status).toBe(404);
    expect((await api('GET', `/api/v1/scheduler/appointments/${id}`, { key: keyB })).status).toBe(404);
    expect((await api('POST', `/api/v1/scheduler/appointments/${id}/cancel`, { key: keyB, body: {} })).status).toBe(404);
    // Booking another organization's agent is a 400 naming agent_id.
    expect((await book({ agent_id: agentId, start_time: '2031-08-02T10:00:00Z', duration_minutes: 30, ...attendee }, keyB)).body.error.details.fields[0].path).toBe('agent_id');
  });
});

describe('with Cal.com connected', () => {
  let cal: FakeCalcom;
  beforeAll(async () => {
    cal = await startFakeCalcom();
  });
  afterAll(async () => {
    await api('DELETE', '/api/v1/scheduler/integration', { key: keyB });
    await cal.close();
  });

  it('verifies the key on connect and never returns it', async () => {
    const refused = await api('PUT', '/api/v1/scheduler/integration', { key: keyB, body: { provider: 'calcom', api_key: 'wrong', event_type_id: cal.eventTypeId, base_url: cal.url } });
    expect(refused.status).toBe(422);
    const badEvent = await api('PUT', '/api/v1/scheduler/integration', { key: keyB, body: { provider: 'calcom', api_key: cal.apiKey, event_type_id: 1, base_url: cal.url } });
    expect(badEvent.status).toBe(422);
    const connected = await api('PUT', '/api/v1/scheduler/integration', {
      key: keyB,
      body: { provider: 'calcom', api_key: cal.apiKey, event_type_id: cal.eventTypeId, base_url: cal.url, webhook_secret: 'whsec-test-secret' },
    });
    expect(connected.status).toBe(200);
    expect(connected.body.data).toMatchObject({ connected: true, provider: 'calcom', event_type_id: cal.eventTypeId, has_webhook_secret: true, account: 'owner@example.com' });
    const read = await api('GET', '/api/v1/scheduler/integration', { key: keyB });
    expect(read.body.data.connected).toBe(true);
    expect(JSON.stringify(read.body)).not.toContain(cal.apiKey);
    expect(JSON.stringify(read.body)).not.toContain('whsec-test-secret');
  });

  it('offers, books, reschedules and cancels through Cal.com; webhooks keep our copy in step', async () => {
    const agentId = await agent(keyB);
    const slots = await api('GET', `/api/v1/scheduler/availability?agent_id=${agentId}&start=2031-09-01&end=2031-09-01&duration_minutes=30`, { key: keyB });
    expect(slots.body.data.provider).toBe('calcom');
    expect(slots.body.data.slots.map((s: any) => s.start)).toEqual(['2031-09-01T09:00:00Z', '2031-09-01T09:30:00Z', '2031-09-01T10:00:00Z', '2031-09-01T10:30:00Z', '2031-09-01T11:00:00Z', '2031-09-01T11:30:00Z']);

    const booked = await book({ agent_id: agentId, start_time: '2031-09-01T09:00:00Z', duration_minutes: 30, ...attendee }, keyB);
    expect(booked.status).toBe(200);
    const uid = booked.body.data.scheduler_booking_uid;
    expect(booked.body.data).toMatchObject({ provider: 'calcom', status: 'accepted', meeting_url: `https://cal.example/video/${uid}` });
    expect(cal.bookings.get(uid)?.metadata.agent_id).toBe(agentId);
    expect((await book({ agent_id: agentId, start_time: '2031-09-01T09:00:00Z', duration_minutes: 30, ...attendee }, keyB)).status).toBe(422);

    const moved = await api('POST', `/api/v1/scheduler/appointments/${booked.body.data.id}/reschedule`, { key: keyB, body: { start_time: '2031-09-01T10:00:00Z', reason: 'Clash' } });
    expect(moved.status).toBe(200);
    expect(moved.body.data.scheduler_booking_uid).not.toBe(uid);
    expect(cal.bookings.get(uid)?.status).toBe('cancelled');
    expect(cal.requests.find((r) => r.path.endsWith('/reschedule'))).toMatchObject({ version: '2024-08-13', body: { start: '2031-09-01T10:00:00.000Z', reschedulingReason: 'Clash' } });

    // Cal.com cancels it on its side: the signed webhook cancels our copy; a bad signature is refused.
    const newUid = moved.body.data.scheduler_booking_uid;
    const payload = JSON.stringify({ triggerEvent: 'BOOKING_CANCELLED', createdAt: new Date().toISOString(), payload: { uid: newUid, cancellationReason: 'Host unavailable' } });
    const orgB = booked.body.data.organization_id;
    const path = `/api/v1/scheduler/webhooks/calcom/${orgB}`;
    const bad = await api('POST', path, { key: null, body: payload, headers: { 'content-type': 'application/json', 'x-cal-signature-256': 'deadbeef' } });
    expect(bad.status).toBe(401);
    const signature = createHmac('sha256', 'whsec-test-secret').update(payload).digest('hex');
    const hook = await api('POST', path, { key: null, body: payload, headers: { 'content-type': 'application/json', 'x-cal-signature-256': signature } });
    expect(hook.status).toBe(200);
    expect(hook.body.data).toMatchObject({ trigger_event: 'BOOKING_CANCELLED', action: 'cancelled' });
    expect((await api('GET', `/api/v1/scheduler/appointments/${moved.body.data.id}`, { key: keyB })).body.data).toMatchObject({ status: 'cancelled', cancellation_reason: 'Host unavailable' });

    // A booking rescheduled on Cal.com's side moves our copy.
    const again = await book({ agent_id: agentId, start_time: '2031-09-01T11:00:00Z', duration_minutes: 30, ...attendee }, keyB);
    const moveBody = JSON.stringify({ triggerEvent: 'BOOKING_RESCHEDULED', payload: { uid: 'cal-new-uid', rescheduleUid: again.body.data.scheduler_booking_uid, startTime: '2031-09-02T09:00:00Z', endTime: '2031-09-02T09:30:00Z' } });
    const sig2 = createHmac('sha256', 'whsec-test-secret').update(moveBody).digest('hex');
    const moveHook = await api('POST', path, { key: null, body: moveBody, headers: { 'content-type': 'application/json', 'x-cal-signature-256': sig2 } });
    expect(moveHook.body.data.action).toBe('rescheduled');
    const next = await api('GET', `/api/v1/scheduler/appointments/${moveHook.body.data.appointment_id}`, { key: keyB });
    expect(next.body.data).toMatchObject({ status: 'accepted', scheduler_booking_uid: 'cal-new-uid', start_time: '2031-09-02T09:00:00.000Z', rescheduled_from: again.body.data.id });
    // Delivered twice: nothing more happens.
    expect((await api('POST', path, { key: null, body: moveBody, headers: { 'content-type': 'application/json', 'x-cal-signature-256': sig2 } })).body.data.action).toBe('ignored');

    const cancelled = await api('POST', `/api/v1/scheduler/appointments/${next.body.data.id}/cancel`, { key: keyB, body: {} });
    expect(cancelled.status).toBe(422); // cal-new-uid is unknown to Cal.com (made up above): its refusal is a 422
  });
});

import { calcomProvider } from '../../shared/adapters/scheduling/calcom';
import { SchedulerRefused, SchedulerUnavailable } from '../../shared/adapters/scheduling/port';
import { startFakeCalcom, type FakeCalcom } from '../support/fake-calcom';

describe('Cal.com adapter (API v2) against a local server', () => {
  let cal: FakeCalcom;
  beforeAll(async () => {
    cal = await startFakeCalcom();
  });
  afterAll(() => cal.close());
  const provider = () => calcomProvider({ apiKey: cal.apiKey, eventTypeId: cal.eventTypeId, baseUrl: `${cal.url}/v2`, eventTypeLength: 30 });

  it('verifies the key and the event type', async () => {
    await expect(provider().verify()).resolves.toEqual({ account: 'owner@example.com', eventTypeLength: 30 });
    await expect(calcomProvider({ apiKey: 'nope', eventTypeId: cal.eventTypeId, baseUrl: cal.url }).verify()).rejects.toBeInstanceOf(SchedulerRefused);
    await expect(calcomProvider({ apiKey: cal.apiKey, eventTypeId: 1, baseUrl: cal.url }).verify()).rejects.toMatchObject({ status: 404 });
  });

  it('lists slots, books, reschedules and cancels with the documented versions and shapes', async () => {
    const slots = await provider().slots({ start: '2032-02-02T00:00:00Z', end: '2032-02-03T00:00:00Z', timeZone: 'UTC', durationMinutes: 30 });
    expect(slots).toHaveLength(6);
    const booking = await provider().book({ start: '2032-02-02T09:00:00.000Z', durationMinutes: 30, attendee: { name: 'Ada', email: 'ada@example.com', timeZone: 'UTC' }, metadata: { agent_id: 'a' } });
    expect(booking).toMatchObject({ start: '2032-02-02T09:00:00.000Z', end: '2032-02-02T09:30:00.000Z', durationMinutes: 30, status: 'accepted' });
    const sent = cal.requests.find((r) => r.method === 'POST' && r.path === '/v2/bookings');
    expect(sent).toMatchObject({ version: '2024-08-13', body: { start: '2032-02-02T09:00:00.000Z', eventTypeId: cal.eventTypeId, attendee: { name: 'Ada', email: 'ada@example.com', timeZone: 'UTC' } } });
    expect(sent?.body).not.toHaveProperty('lengthInMinutes');
    await expect(provider().book({ start: '2032-02-02T09:00:00.000Z', durationMinutes: 30, attendee: { name: 'B', email: 'b@example.com', timeZone: 'UTC' }, metadata: {} })).rejects.toBeInstanceOf(SchedulerRefused);
    const moved = await provider().reschedule(booking.uid, { start: '2032-02-02T10:00:00.000Z', reason: 'Clash' });
    expect(moved.uid).not.toBe(booking.uid);
    await provider().cancel(moved.uid, 'Done');
    expect(cal.bookings.get(moved.uid)?.status).toBe('cancelled');
    expect(cal.requests.find((r) => r.path === '/v2/slots')?.version).toBe('2024-09-04');
  });

  it('reports an unreachable service as unavailable', async () => {
    await expect(calcomProvider({ apiKey: 'k', eventTypeId: 1, baseUrl: 'http://127.0.0.1:1', timeoutMs: 2000 }).verify()).rejects.toBeInstanceOf(SchedulerUnavailable);
  });
});

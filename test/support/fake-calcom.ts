import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';

/**
 * A local stand-in for Cal.com's API v2, speaking its documented shapes: Bearer auth,
 * `cal-api-version` required on versioned endpoints, `{ status: "success", data }` answers,
 * GET /v2/me, GET /v2/event-types/{id}, GET /v2/slots (data keyed by date, items `{ start }`),
 * POST /v2/bookings, POST /v2/bookings/{uid}/reschedule (a new uid) and /cancel.
 */
export interface FakeBooking {
  uid: string;
  start: string;
  end: string;
  duration: number;
  status: 'accepted' | 'cancelled';
  attendees: { name: string; email: string; timeZone: string }[];
  metadata: Record<string, string>;
  rescheduledToUid?: string;
}

export interface FakeCalcom {
  url: string;
  apiKey: string;
  eventTypeId: number;
  bookings: Map<string, FakeBooking>;
  requests: { method: string; path: string; version?: string; body?: unknown }[];
  close(): Promise<void>;
}

const EVENT_LENGTH = 30;

export async function startFakeCalcom(apiKey = 'cal_live_test_key', eventTypeId = 4242): Promise<FakeCalcom> {
  const bookings = new Map<string, FakeBooking>();
  const requests: FakeCalcom['requests'] = [];
  const read = (req: IncomingMessage) =>
    new Promise<string>((resolve) => {
      let data = '';
      req.on('data', (c) => (data += c));
      req.on('end', () => resolve(data));
    });
  const taken = (start: number, end: number, except?: string) =>
    [...bookings.values()].some((b) => b.status === 'accepted' && b.uid !== except && Date.parse(b.start) < end && start < Date.parse(b.end));

  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const text = await read(req);
    const body = text ? JSON.parse(text) : undefined;
    const version = req.headers['cal-api-version'] as string | undefined;
    requests.push({ method: req.method!, path: url.pathname, version, body });
    const send = (status: number, payload: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(payload));
    };
    const ok = (data: unknown) => send(200, { status: 'success', data });
    const fail = (status: number, message: string) => send(status, { status: 'error', timestamp: new Date().toISOString(), path: url.pathname, error: { code: 'BadRequestException', message } });
    if (req.headers.authorization !== `Bearer ${apiKey}`) return fail(401, 'Invalid Access Token.');
    const needs = (v: string) => version === v || (fail(400, `cal-api-version ${v} required`), false);
    const m = url.pathname.match(/^\/v2\/bookings\/([^/]+)\/(reschedule|cancel)$/);
    if (req.method === 'GET' && url.pathname === '/v2/me') return ok({ id: 7, email: 'owner@example.com', username: 'owner', timeZone: 'UTC' });
    if (req.method === 'GET' && url.pathname === `/v2/event-types/${eventTypeId}`) return needs('2024-06-14') && ok({ id: eventTypeId, lengthInMinutes: EVENT_LENGTH, title: 'Intro', slug: 'intro' });
    if (req.method === 'GET' && url.pathname.startsWith('/v2/event-types/')) return fail(404, 'Event type not found');
    if (req.method === 'GET' && url.pathname === '/v2/slots') {
      if (!needs('2024-09-04')) return;
      if (url.searchParams.get('eventTypeId') !== String(eventTypeId)) return fail(400, 'unknown event type');
      const duration = Number(url.searchParams.get('duration') ?? EVENT_LENGTH);
      const from = Date.parse(url.searchParams.get('start')!);
      const to = Date.parse(url.searchParams.get('end')!);
      const data: Record<string, { start: string }[]> = {};
      // Bookable on the hour and half hour, 09:00–12:00 UTC.
      for (let t = Math.ceil(from / 1_800_000) * 1_800_000; t + duration * 60_000 <= to; t += 1_800_000) {
        const h = new Date(t).getUTCHours();
        if (h < 9 || h >= 12 || taken(t, t + duration * 60_000)) continue;
        const day = new Date(t).toISOString().slice(0, 10);
        (data[day] ??= []).push({ start: new Date(t).toISOString() });
      }
      return ok(data);
    }
    if (req.method === 'POST' && url.pathname === '/v2/bookings') {
      if (!needs('2024-08-13')) return;
      const start = Date.parse(body.start);
      const duration = body.lengthInMinutes ?? EVENT_LENGTH;
      if (body.eventTypeId !== eventTypeId || !body.attendee?.email) return fail(400, 'bad booking');
      if (taken(start, start + duration * 60_000)) return fail(400, 'User either already has booking at this time or is not available');
      const b: FakeBooking = { uid: randomUUID(), start: new Date(start).toISOString(), end: new Date(start + duration * 60_000).toISOString(), duration, status: 'accepted', attendees: [body.attendee], metadata: body.metadata ?? {} };
      bookings.set(b.uid, b);
      return send(201, { status: 'success', data: { id: bookings.size, ...b, meetingUrl: `https://cal.example/video/${b.uid}`, eventTypeId } });
    }
    if (req.method === 'POST' && m) {
      if (!needs('2024-08-13')) return;
      const b = bookings.get(decodeURIComponent(m[1]));
      if (!b || b.status !== 'accepted') return fail(400, 'booking not found or not active');
      if (m[2] === 'cancel') {
        b.status = 'cancelled';
        return ok({ ...b });
      }
      const start = Date.parse(body.start);
      if (taken(start, start + b.duration * 60_000, b.uid)) return fail(400, 'slot not available');
      const next: FakeBooking = { ...b, uid: randomUUID(), start: new Date(start).toISOString(), end: new Date(start + b.duration * 60_000).toISOString() };
      b.status = 'cancelled';
      b.rescheduledToUid = next.uid;
      bookings.set(next.uid, next);
      return send(201, { status: 'success', data: { ...next, rescheduledFromUid: b.uid, meetingUrl: `https://cal.example/video/${next.uid}` } });
    }
    return fail(404, 'not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    apiKey,
    eventTypeId,
    bookings,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

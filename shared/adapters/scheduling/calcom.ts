import type { BookingRequest, ExternalBooking, SchedulingProvider } from './port';
import { SchedulerRefused, SchedulerUnavailable } from './port';

/**
 * Cal.com's public API v2. Every call sends `Authorization: Bearer <api key>` and the
 * `cal-api-version` its endpoint documents: slots 2024-09-04, bookings 2024-08-13, event types
 * 2024-06-14 (`/v2/me` takes none). Responses are `{ "status": "success", "data": … }`.
 */
export const CALCOM_DEFAULT_BASE_URL = 'https://api.cal.com';
export const CALCOM_VERSIONS = { slots: '2024-09-04', bookings: '2024-08-13', eventTypes: '2024-06-14' } as const;

export interface CalcomOptions {
  apiKey: string;
  eventTypeId: number;
  /** Without `/v2` (a trailing `/v2` is tolerated). */
  baseUrl?: string;
  /** The event type's default length: `lengthInMinutes` is only sent when a booking differs from it. */
  eventTypeLength?: number;
  timeoutMs?: number;
}

interface CalBooking {
  uid: string;
  start: string;
  end: string;
  duration?: number;
  status?: string;
  meetingUrl?: string;
  location?: string;
}

function toBooking(b: CalBooking): ExternalBooking {
  const start = new Date(b.start).toISOString();
  const end = new Date(b.end).toISOString();
  return {
    uid: b.uid,
    start,
    end,
    durationMinutes: b.duration ?? Math.round((Date.parse(end) - Date.parse(start)) / 60_000),
    meetingUrl: b.meetingUrl ?? (typeof b.location === 'string' && /^https?:\/\//.test(b.location) ? b.location : ''),
    status: b.status ?? 'accepted',
  };
}

export function calcomProvider(options: CalcomOptions): SchedulingProvider {
  const base = (options.baseUrl ?? CALCOM_DEFAULT_BASE_URL).replace(/\/+$/, '').replace(/\/v2$/, '');
  const timeoutMs = options.timeoutMs ?? 10_000;

  async function call<T>(method: 'GET' | 'POST', path: string, version: string | undefined, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        redirect: 'error',
        signal: AbortSignal.timeout(timeoutMs),
        headers: {
          authorization: `Bearer ${options.apiKey}`,
          ...(version ? { 'cal-api-version': version } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new SchedulerUnavailable(`Cal.com could not be reached: ${(err as Error).message}`, { cause: err });
    }
    const text = await res.text();
    let json: { status?: string; data?: unknown; error?: { message?: string } } | undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    if (res.status >= 400 && res.status < 500) {
      throw new SchedulerRefused(`Cal.com refused ${method} ${path.split('?')[0]} (${res.status}): ${json?.error?.message ?? text.slice(0, 200)}`, res.status);
    }
    if (!res.ok || json?.status !== 'success') throw new SchedulerUnavailable(`Cal.com answered ${res.status} to ${method} ${path.split('?')[0]}`);
    return json.data as T;
  }

  return {
    async verify() {
      const me = await call<{ id?: number; email?: string; username?: string }>('GET', '/v2/me', undefined);
      const eventType = await call<{ id: number; lengthInMinutes?: number }>('GET', `/v2/event-types/${options.eventTypeId}`, CALCOM_VERSIONS.eventTypes);
      return { account: String(me.email ?? me.username ?? me.id ?? ''), eventTypeLength: eventType?.lengthInMinutes };
    },
    async slots(q) {
      const params = new URLSearchParams({
        eventTypeId: String(options.eventTypeId),
        start: q.start,
        end: q.end,
        timeZone: q.timeZone,
        duration: String(q.durationMinutes),
      });
      const data = await call<Record<string, { start: string }[]>>('GET', `/v2/slots?${params}`, CALCOM_VERSIONS.slots);
      return Object.values(data ?? {}).flatMap((day) => day.map((s) => s.start));
    },
    async book(req: BookingRequest) {
      const data = await call<CalBooking>('POST', '/v2/bookings', CALCOM_VERSIONS.bookings, {
        start: req.start,
        eventTypeId: options.eventTypeId,
        attendee: { name: req.attendee.name, email: req.attendee.email, timeZone: req.attendee.timeZone, ...(req.attendee.phoneNumber ? { phoneNumber: req.attendee.phoneNumber } : {}) },
        ...(options.eventTypeLength && req.durationMinutes !== options.eventTypeLength ? { lengthInMinutes: req.durationMinutes } : {}),
        metadata: req.metadata,
      });
      return toBooking(data);
    },
    async reschedule(uid, change) {
      const data = await call<CalBooking>('POST', `/v2/bookings/${encodeURIComponent(uid)}/reschedule`, CALCOM_VERSIONS.bookings, {
        start: change.start,
        ...(change.reason ? { reschedulingReason: change.reason } : {}),
      });
      return toBooking(data);
    },
    async cancel(uid, reason) {
      await call('POST', `/v2/bookings/${encodeURIComponent(uid)}/cancel`, CALCOM_VERSIONS.bookings, { cancellationReason: reason ?? 'Cancelled through the Voice AI Agent Platform API' });
    },
  };
}

import * as z from 'zod/mini';
import { DateTime, IANAZone } from 'luxon';

/** True when `name` is an IANA time zone name the runtime knows (`Europe/Berlin`, `UTC`). */
export function isValidTimeZone(name: string): boolean {
  return typeof name === 'string' && name.length <= 64 && /^[A-Za-z0-9_+\-/]+$/.test(name) && IANAZone.isValidZone(name);
}

/** A time zone field: an IANA name, refused with the field named otherwise. */
export const timeZone = () =>
  z.string().check(z.refine((v) => isValidTimeZone(v), 'must be an IANA time zone name such as "Europe/Berlin" or "UTC"'));

/** An instant with an explicit offset or `Z` (`2030-01-07T10:00:00Z`, `2030-01-07T11:00:00+01:00`). */
export const instant = () =>
  z.pipe(
    z.string().check(
      z.maxLength(40),
      z.refine(
        (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(v) && DateTime.fromISO(v, { setZone: true }).isValid,
        'must be an ISO 8601 timestamp with a time zone offset or Z',
      ),
    ),
    z.transform((v: string) => DateTime.fromISO(v, { setZone: true }).toUTC().toISO()!),
  );

/** An instant, or a calendar date (`2030-01-07`) read in the request's time zone. */
export const instantOrDate = () =>
  z.string().check(
    z.maxLength(40),
    z.refine(
      (v) => (/^\d{4}-\d{2}-\d{2}$/.test(v) ? DateTime.fromISO(v).isValid : /^\d{4}-\d{2}-\d{2}T/.test(v) && DateTime.fromISO(v, { setZone: true }).isValid),
      'must be an ISO 8601 timestamp with an offset, or a date YYYY-MM-DD',
    ),
  );

/** Resolves an instant-or-date in `zone`; a date means that day's start (or, for `end`, the next day's start). */
export function resolveBoundary(value: string, zone: string, isEnd: boolean): DateTime {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const day = DateTime.fromISO(value, { zone }).startOf('day');
    return (isEnd ? day.plus({ days: 1 }) : day).toUTC();
  }
  return DateTime.fromISO(value, { setZone: true }).toUTC();
}

/** The canonical stored form of an instant: UTC with milliseconds, so strings sort by time. */
export const iso = (ms: number) => new Date(ms).toISOString();

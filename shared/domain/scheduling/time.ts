import * as z from 'zod/mini';

// Validation here needs no luxon (~70 KB): the functions that only check a time zone or an
// instant (contacts, calls, events, campaigns) do not load it; date arithmetic in zones does.
const knownZones = new Map<string, boolean>();

/**
 * True when `name` is an IANA time zone name the runtime knows (`Europe/Berlin`, `UTC`): the
 * runtime's Intl database decides, as it does for luxon's `IANAZone.isValidZone`.
 */
export function isValidTimeZone(name: string): boolean {
  if (typeof name !== 'string' || name.length > 64 || !/^[A-Za-z0-9_+\-/]+$/.test(name)) return false;
  let known = knownZones.get(name);
  if (known === undefined) {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: name });
      known = true;
    } catch {
      known = false;
    }
    if (knownZones.size < 1000) knownZones.set(name, known);
  }
  return known;
}

const INSTANT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,3})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

/** True when year-month-day names a real calendar day. */
function isRealDay(year: string, month: string, day: string): boolean {
  const y = Number(year);
  const leap = (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][Number(month) - 1];
  return days !== undefined && Number(day) >= 1 && Number(day) <= days;
}

/** True when `v` is an ISO 8601 timestamp with an offset or Z naming a real calendar day and time. */
function isInstant(v: string): boolean {
  const m = INSTANT.exec(v);
  if (!m) return false;
  const [year, month, day, hour, minute, second = '0', offsetHours = '0', offsetMinutes = '0'] = m.slice(1).map((x) => x ?? undefined) as string[];
  return isRealDay(year!, month!, day!) && (Number(hour) <= 23 || (hour === '24' && minute === '00' && Number(second) === 0)) && Number(minute) <= 59 && Number(second) <= 59 && Number(offsetHours) <= 23 && Number(offsetMinutes) <= 59;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** True when `v` is a date `YYYY-MM-DD` naming a real calendar day. */
export function isCalendarDate(v: string): boolean {
  const date = DATE.exec(v);
  return !!date && isRealDay(date[1]!, date[2]!, date[3]!);
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
        (v) => isInstant(v),
        'must be an ISO 8601 timestamp with a time zone offset or Z',
      ),
    ),
    z.transform((v: string) => new Date(v).toISOString()),
  );

/** The canonical stored form of an instant: UTC with milliseconds, so strings sort by time. */
export const iso = (ms: number) => new Date(ms).toISOString();

/**
 * An instant with an offset or `Z`, or a calendar date (`2030-01-07`) that the service reads in
 * the request's time zone (shared/domain/scheduling/zoned.ts). Checked without luxon.
 */
export const instantOrDate = () =>
  z.string().check(
    z.maxLength(40),
    z.refine((v) => (DATE.test(v) ? isCalendarDate(v) : isInstant(v)), 'must be an ISO 8601 timestamp with an offset, or a date YYYY-MM-DD'),
  );

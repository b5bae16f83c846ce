import * as z from 'zod/mini';
import { DateTime } from 'luxon';

// Dates read in a time zone need luxon (~70 KB); kept apart from time.ts so that functions that
// only validate instants and zone names never load it.

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

import { DateTime } from 'luxon';

// Dates read in a time zone need luxon (~70 KB); kept apart from time.ts so that functions that
// only validate instants, dates and zone names never load it.

/** Resolves an instant-or-date in `zone`; a date means that day's start (or, for `end`, the next day's start). */
export function resolveBoundary(value: string, zone: string, isEnd: boolean): DateTime {
  if (/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    const day = DateTime.fromISO(value, { zone }).startOf('day');
    return (isEnd ? day.plus({ days: 1 }) : day).toUTC();
  }
  return DateTime.fromISO(value, { setZone: true }).toUTC();
}

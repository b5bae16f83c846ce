import { DateTime } from 'luxon';

/**
 * The calling window of a campaign, and the one function that says when it next opens. The
 * dispatcher (is a contact dialable now?), the retries (when is a retry due?) and the preview
 * (when does the window open, when would it finish?) all go through `nextOpening`.
 */
export interface CallingWindow {
  /** `HH:MM`, local time of the zone that applies. */
  window_start: string;
  /** `HH:MM` or `24:00` (the end of the day), after `window_start` (no overnight windows). */
  window_end: string;
  /** Cron day numbers: 0 = Sunday … 6 = Saturday; 7 is Sunday too. */
  window_days: number[];
  /** The campaign's IANA zone: the window's zone unless the contact has its own, and always the blackout dates' zone. */
  timezone: string;
  /** `YYYY-MM-DD` days without calls, in the campaign's zone. */
  blackout_dates: string[];
  use_contact_timezone: boolean;
}

/** How far ahead an opening is looked for; a schedule that never opens within it has none. */
const HORIZON_DAYS = 800;

const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** The zone the window applies in for a contact: its own `timezone` when the campaign says so and it has a valid one. */
export function windowZone(window: CallingWindow, contactZone?: string | null): string {
  if (window.use_contact_timezone && contactZone && DateTime.local().setZone(contactZone).isValid) return contactZone;
  return window.timezone;
}

/** The local day-of-week in cron numbering (0 = Sunday). */
const cronDay = (d: DateTime) => d.weekday % 7;

/** The instant a local wall-clock time falls on in a zone (a time skipped by DST moves forward with it). */
const at = (day: DateTime, mins: number) =>
  // 24:00 is the next day's start (itself a local midnight, so right across DST too).
  mins >= 24 * 60 ? day.startOf('day').plus({ days: 1 }) : day.set({ hour: Math.floor(mins / 60), minute: mins % 60, second: 0, millisecond: 0 });

/** The end of the blackout day (in the campaign's zone) covering `t`, or undefined when `t` is not blacked out. */
function blackoutEnd(t: DateTime, window: CallingWindow, blackout: Set<string>): DateTime | undefined {
  if (!blackout.size) return undefined;
  const local = t.setZone(window.timezone);
  if (!blackout.has(local.toISODate()!)) return undefined;
  return local.startOf('day').plus({ days: 1 });
}

/**
 * The first instant at or after `from` at which a call may start: inside `window_start`–
 * `window_end` of an allowed day in the zone that applies (the contact's own when
 * `use_contact_timezone`), and not on a blackout date of the campaign's zone. Equals `from`
 * when the window is open then. Correct across DST changes: each day's bounds are that day's
 * local wall-clock times. Null when the window never opens (within about two years).
 */
export function nextOpening(window: CallingWindow, from: Date, contactZone?: string | null): Date | null {
  const zone = windowZone(window, contactZone);
  const days = new Set(window.window_days.map((d) => d % 7));
  const blackout = new Set(window.blackout_dates);
  const startMin = minutes(window.window_start);
  const endMin = minutes(window.window_end);
  const t0 = DateTime.fromJSDate(from).setZone(zone);
  let day = t0.startOf('day');
  for (let i = 0; i < HORIZON_DAYS; i++, day = day.plus({ days: 1 }).startOf('day')) {
    if (!days.has(cronDay(day))) continue;
    const open = at(day, startMin);
    const close = at(day, endMin);
    let candidate = open < t0 ? t0 : open;
    // Step over blackout days of the campaign's zone (they may cut this window part-way).
    for (let end = blackoutEnd(candidate, window, blackout); end; end = blackoutEnd(candidate, window, blackout)) candidate = end.setZone(zone);
    if (candidate < close) return candidate.toJSDate();
  }
  return null;
}

/** True when a call may start at `t` for a contact in `contactZone`. */
export function isOpen(window: CallingWindow, t: Date, contactZone?: string | null): boolean {
  return nextOpening(window, t, contactZone)?.getTime() === t.getTime();
}

/** When the window that is open at `t` closes (or `t` itself when it is closed). */
export function closingAfter(window: CallingWindow, t: Date, contactZone?: string | null): Date {
  if (!isOpen(window, t, contactZone)) return t;
  const zone = windowZone(window, contactZone);
  const local = DateTime.fromJSDate(t).setZone(zone);
  let close = at(local.startOf('day'), minutes(window.window_end));
  // A blackout day starting before the window's end cuts it there.
  const nextDay = local.setZone(window.timezone).startOf('day').plus({ days: 1 });
  if (window.blackout_dates.includes(nextDay.toISODate()!) && nextDay < close) close = nextDay.setZone(zone);
  return close.toJSDate();
}

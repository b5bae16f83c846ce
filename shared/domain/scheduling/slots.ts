import { DateTime } from 'luxon';

import { MINUTE, SLOT_STEP_MINUTES, type Interval, type WorkingHours } from './buckets';

/**
 * The built-in calendar's arithmetic in time zones, free of storage so it is unit-tested on its
 * own. Working hours are read in their own time zone with luxon, so a day that gains or loses an
 * hour (DST) keeps its wall-clock window. Loaded on first use by the appointments service.
 */
const hm = (value: string) => value.split(':').map(Number) as [number, number];

/** True when [start, end) lies inside one working day's window, read in the hours' own time zone. */
export function withinWorkingHours(startMs: number, endMs: number, hours: WorkingHours): boolean {
  const local = DateTime.fromMillis(startMs, { zone: hours.timezone });
  const day = local.weekday % 7; // luxon: 1 = Monday … 7 = Sunday
  const days = new Set(hours.days.map((d) => d % 7));
  if (!days.has(day)) return false;
  const midnight = local.startOf('day');
  const [sh, sm] = hm(hours.start);
  const [eh, em] = hm(hours.end);
  const open = midnight.set({ hour: sh, minute: sm });
  const close = eh === 24 ? midnight.plus({ days: 1 }) : midnight.set({ hour: eh, minute: em });
  return startMs >= open.toMillis() && endMs <= close.toMillis();
}

export const overlaps = (a: Interval, b: Interval) => a.start < b.end && b.start < a.end;

export interface SlotRequest {
  from: number;
  to: number;
  durationMinutes: number;
  busy: Interval[];
  workingHours?: WorkingHours;
  /** Slots starting before this are not offered. */
  now: number;
  stepMinutes?: number;
}

/** Free slots of `durationMinutes` inside [from, to), on a grid of `stepMinutes` (UTC-aligned). */
export function freeSlots(req: SlotRequest): Interval[] {
  const step = (req.stepMinutes ?? SLOT_STEP_MINUTES) * MINUTE;
  const length = req.durationMinutes * MINUTE;
  const first = Math.ceil(Math.max(req.from, req.now) / step) * step;
  const busy = [...req.busy].sort((a, b) => a.start - b.start);
  const out: Interval[] = [];
  for (let start = first; start + length <= req.to; start += step) {
    const slot = { start, end: start + length };
    if (req.workingHours && !withinWorkingHours(slot.start, slot.end, req.workingHours)) continue;
    if (busy.some((b) => overlaps(b, slot))) continue;
    out.push(slot);
  }
  return out;
}

/** A slot as the API shows it: both ends in the requested time zone, with its offset. */
export function slotView(slot: Interval, zone: string): { start: string; end: string } {
  const fmt = (ms: number) => DateTime.fromMillis(ms, { zone }).toISO({ suppressMilliseconds: true })!;
  return { start: fmt(slot.start), end: fmt(slot.end) };
}

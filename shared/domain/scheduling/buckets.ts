/**
 * The built-in calendar's arithmetic that needs no time zone: the 5-minute buckets that lock a
 * slot, and the limits. Apart from slots.ts (luxon, about 70 KB) so that functions which only
 * read, list or cancel appointments do not load luxon. Times are epoch milliseconds.
 */
export const BUCKET_MINUTES = 5;
/** Availability offers a start every 15 minutes. */
export const SLOT_STEP_MINUTES = 15;
/**
 * Longest appointment. A reschedule locks the new buckets and frees the old ones in one
 * transaction: 2 × 36 buckets + 5 other items stays under DynamoDB's 100 items.
 */
export const MAX_DURATION_MINUTES = 180;
/** Longest availability range. */
export const MAX_RANGE_DAYS = 31;

export const MINUTE = 60_000;

export interface Interval {
  start: number;
  end: number;
}

export interface WorkingHours {
  /** 0 = Sunday … 6 = Saturday (7 is taken as Sunday). */
  days: number[];
  /** `HH:MM`, inclusive. */
  start: string;
  /** `HH:MM` (or `24:00`), exclusive; after `start`. */
  end: string;
  timezone: string;
}

/** The starts (ISO, UTC) of the 5-minute buckets an appointment covers. */
export function bucketsOf(startMs: number, durationMinutes: number): string[] {
  const out: string[] = [];
  for (let t = startMs; t < startMs + durationMinutes * MINUTE; t += BUCKET_MINUTES * MINUTE) out.push(new Date(t).toISOString());
  return out;
}

/** True when a start lies on the 5-minute grid (every real time zone offset is a multiple of 15 min). */
export function onBucketGrid(startMs: number): boolean {
  return startMs % (BUCKET_MINUTES * MINUTE) === 0;
}

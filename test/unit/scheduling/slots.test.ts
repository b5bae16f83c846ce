import { bucketsOf, onBucketGrid } from '../../../shared/domain/scheduling/buckets';
import { freeSlots, withinWorkingHours } from '../../../shared/domain/scheduling/slots';
import { isValidTimeZone } from '../../../shared/domain/scheduling/time';
import { resolveBoundary } from '../../../shared/domain/scheduling/zoned';

const at = (s: string) => Date.parse(s);
const hours = { days: [0, 1, 2, 3, 4, 5, 6], start: '09:00', end: '17:00', timezone: 'America/New_York' };

describe('time zones', () => {
  it.each(['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kathmandu'])('accepts %s', (tz) => expect(isValidTimeZone(tz)).toBe(true));
  it.each(['Mars/Olympus', '', 'Europe/Berlin ', '+02:00', 'EST5EDT; DROP'])('refuses %p', (tz) => expect(isValidTimeZone(tz)).toBe(false));
  it('reads a date as that day in the zone, the end as the next midnight', () => {
    expect(resolveBoundary('2030-03-10', 'America/New_York', false).toISO()).toBe('2030-03-10T05:00:00.000Z');
    expect(resolveBoundary('2030-03-10', 'America/New_York', true).toISO()).toBe('2030-03-11T04:00:00.000Z');
  });
});

describe('slots', () => {
  it('keeps the wall-clock working window on the DST day', () => {
    // Prepare: 2030-03-10 is the day New York moves to daylight time.
    const day = (d: string) => freeSlots({ from: at(`${d}T00:00:00Z`), to: at(`${d}T23:59:00Z`), durationMinutes: 60, busy: [], workingHours: hours, now: 0, stepMinutes: 60 });
    // Act
    const before = day('2030-03-09');
    const dst = day('2030-03-10');
    // Assess
    expect(new Date(before[0].start).toISOString()).toBe('2030-03-09T14:00:00.000Z');
    expect(new Date(dst[0].start).toISOString()).toBe('2030-03-10T13:00:00.000Z');
    expect(dst).toHaveLength(8);
    expect(before).toHaveLength(8);
  });

  it('skips busy time, past time and days off', () => {
    const slots = freeSlots({
      from: at('2030-01-07T09:00:00Z'), to: at('2030-01-07T11:00:00Z'), durationMinutes: 30,
      busy: [{ start: at('2030-01-07T10:00:00Z'), end: at('2030-01-07T10:30:00Z') }], now: at('2030-01-07T09:10:00Z'),
    });
    expect(slots.map((s) => new Date(s.start).toISOString().slice(11, 16))).toEqual(['09:15', '09:30', '10:30']);
    const monday = at('2030-01-07T15:00:00Z');
    expect(withinWorkingHours(monday, monday + 1_800_000, { ...hours, days: [1] })).toBe(true);
    expect(withinWorkingHours(monday, monday + 1_800_000, { ...hours, days: [0, 2] })).toBe(false);
    expect(withinWorkingHours(at('2030-01-07T21:45:00Z'), at('2030-01-07T22:15:00Z'), hours)).toBe(false);
  });

  it('locks one 5-minute bucket per 5 minutes covered', () => {
    expect(bucketsOf(at('2030-01-07T10:00:00Z'), 15)).toEqual(['2030-01-07T10:00:00.000Z', '2030-01-07T10:05:00.000Z', '2030-01-07T10:10:00.000Z']);
    expect(onBucketGrid(at('2030-01-07T10:05:00Z'))).toBe(true);
    expect(onBucketGrid(at('2030-01-07T10:07:00Z'))).toBe(false);
  });
});

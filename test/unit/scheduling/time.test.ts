import * as z from 'zod/mini';
import { instant, instantOrDate, isCalendarDate, isValidTimeZone } from '../../../shared/domain/scheduling/time';
import { ScheduleInput } from '../../../shared/domain/campaigns/schemas';

describe('instants and time zones, checked without luxon', () => {
  const parse = (v: string) => {
    const r = instant().safeParse(v);
    return r.success ? r.data : 'invalid';
  };

  it('reads an instant with an offset or Z into UTC with milliseconds', () => {
    expect(parse('2030-01-07T11:00:00+01:00')).toBe('2030-01-07T10:00:00.000Z');
    expect(parse('2030-01-07T10:00:00.5-05:30')).toBe('2030-01-07T15:30:00.500Z');
    expect(parse('2028-02-29T10:00Z')).toBe('2028-02-29T10:00:00.000Z');
    expect(parse('2030-01-07T24:00Z')).toBe('2030-01-08T00:00:00.000Z');
  });

  it('refuses days, times and offsets that do not exist, and instants without an offset', () => {
    for (const v of ['2030-02-29T10:00Z', '1900-02-29T00:00Z', '2030-04-31T10:00Z', '2030-13-01T10:00Z', '2030-01-07T24:30Z', '2030-01-07T10:60Z', '2030-01-07T10:00:00+25:00', '2030-01-07T10:00:00+01:75', '2030-01-07T10:00:00', '2030-01-07']) {
      expect([v, parse(v)]).toEqual([v, 'invalid']);
    }
  });

  it('knows IANA zones from the runtime', () => {
    expect(['Europe/Berlin', 'UTC', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5'].every(isValidTimeZone)).toBe(true);
    expect(['Mars/Olympus', 'Europe/Berlin ', '', 'x'.repeat(65)].some(isValidTimeZone)).toBe(false);
  });

  it('takes an instant with an offset or a real calendar date for availability bounds', () => {
    const ok = (v: string) => instantOrDate().safeParse(v).success;
    expect(['2031-06-02', '2028-02-29', '2031-06-02T07:00:00Z', '2031-06-02T09:00:00+02:00'].every(ok)).toBe(true);
    expect(['2031-02-29', '2031-13-01', '2031-06-02T07:00:00', '2031-06-02T25:00Z', 'tomorrow', ''].some(ok)).toBe(false);
  });

  it('knows real calendar days, for availability bounds and campaign blackout dates alike', () => {
    expect(['2028-02-29', '2031-12-31', '2031-01-01'].every(isCalendarDate)).toBe(true);
    expect(['2031-02-29', '2031-04-31', '2031-00-10', '2031-1-1', '2031-01-01T00:00Z'].some(isCalendarDate)).toBe(false);
    expect(z.safeParse(ScheduleInput, { blackout_dates: ['2031-12-24'] }).success).toBe(true);
    const refused = z.safeParse(ScheduleInput, { blackout_dates: ['2031-02-30'] });
    expect(refused.error?.issues.map((i) => i.message)).toEqual(['must be a real calendar date']);
  });
});

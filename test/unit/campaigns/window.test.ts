import { closingAfter, isOpen, nextOpening, type CallingWindow } from '../../../shared/domain/campaigns/window';

const base: CallingWindow = {
  window_start: '09:00', window_end: '17:00', window_days: [1, 2, 3, 4, 5], timezone: 'UTC', blackout_dates: [], use_contact_timezone: false,
};
const w = (over: Partial<CallingWindow>): CallingWindow => ({ ...base, ...over });
const next = (win: CallingWindow, from: string, zone?: string) => nextOpening(win, new Date(from), zone)?.toISOString() ?? null;

describe('nextOpening', () => {
  it('is the instant itself inside the window, the same day\'s start before it, the next allowed day after it', () => {
    // 2026-03-04 is a Wednesday
    expect(next(base, '2026-03-04T10:30:00.000Z')).toBe('2026-03-04T10:30:00.000Z');
    expect(next(base, '2026-03-04T06:00:00.000Z')).toBe('2026-03-04T09:00:00.000Z');
    expect(next(base, '2026-03-04T17:00:00.000Z')).toBe('2026-03-05T09:00:00.000Z'); // the end is exclusive
    expect(next(base, '2026-03-06T18:00:00.000Z')).toBe('2026-03-09T09:00:00.000Z'); // Friday evening → Monday
  });

  it('reads window_days as cron days: 0 and 7 are Sunday', () => {
    expect(next(w({ window_days: [0] }), '2026-03-04T10:00:00.000Z')).toBe('2026-03-08T09:00:00.000Z');
    expect(next(w({ window_days: [7] }), '2026-03-04T10:00:00.000Z')).toBe('2026-03-08T09:00:00.000Z');
    expect(next(w({ window_days: [6] }), '2026-03-04T10:00:00.000Z')).toBe('2026-03-07T09:00:00.000Z');
  });

  it('keeps local wall-clock hours across the spring-forward change in America/New_York (2026-03-08)', () => {
    const ny = w({ timezone: 'America/New_York', window_days: [0, 1, 2, 3, 4, 5, 6] });
    // Saturday 09:00 EST = 14:00Z; Sunday (DST starts at 02:00) 09:00 EDT = 13:00Z
    expect(next(ny, '2026-03-07T18:00:00.000Z')).toBe('2026-03-07T18:00:00.000Z');
    expect(next(ny, '2026-03-07T23:00:00.000Z')).toBe('2026-03-08T13:00:00.000Z');
    expect(next(ny, '2026-03-06T23:00:00.000Z')).toBe('2026-03-07T14:00:00.000Z');
    // 16:59 EDT on the change day is open, 17:00 EDT (21:00Z) is closed
    expect(isOpen(ny, new Date('2026-03-08T20:59:00.000Z'))).toBe(true);
    expect(isOpen(ny, new Date('2026-03-08T21:00:00.000Z'))).toBe(false);
  });

  it('a window starting inside the skipped hour opens when the clocks have jumped', () => {
    const early = w({ timezone: 'America/New_York', window_start: '02:30', window_end: '05:00', window_days: [0] });
    // 02:30 does not exist on 2026-03-08; the window opens at 03:30 EDT = 07:30Z
    expect(next(early, '2026-03-08T05:00:00.000Z')).toBe('2026-03-08T07:30:00.000Z');
  });

  it('keeps local wall-clock hours across the fall-back change in America/New_York (2026-11-01)', () => {
    const ny = w({ timezone: 'America/New_York', window_days: [0, 1, 2, 3, 4, 5, 6] });
    expect(next(ny, '2026-10-31T22:00:00.000Z')).toBe('2026-11-01T14:00:00.000Z'); // 09:00 EST
    expect(next(ny, '2026-10-30T22:00:00.000Z')).toBe('2026-10-31T13:00:00.000Z'); // 09:00 EDT
    expect(isOpen(ny, new Date('2026-11-01T21:59:00.000Z'))).toBe(true);
    expect(isOpen(ny, new Date('2026-11-01T22:00:00.000Z'))).toBe(false);
  });

  it('follows Europe/Berlin across its own change (2026-03-29), a different day from New York\'s', () => {
    const berlin = w({ timezone: 'Europe/Berlin', window_days: [0, 1, 2, 3, 4, 5, 6] });
    expect(next(berlin, '2026-03-28T20:00:00.000Z')).toBe('2026-03-29T07:00:00.000Z'); // 09:00 CEST
    expect(next(berlin, '2026-03-27T20:00:00.000Z')).toBe('2026-03-28T08:00:00.000Z'); // 09:00 CET
  });

  it('skips blackout dates of the campaign\'s zone, also several in a row', () => {
    const win = w({ blackout_dates: ['2026-03-04', '2026-03-05'] });
    expect(next(win, '2026-03-04T10:00:00.000Z')).toBe('2026-03-06T09:00:00.000Z');
    expect(isOpen(win, new Date('2026-03-04T10:00:00.000Z'))).toBe(false);
  });

  it('uses the contact\'s zone for the window but the campaign\'s zone for blackout dates', () => {
    const win = w({ timezone: 'America/New_York', use_contact_timezone: true, blackout_dates: ['2026-03-04'] });
    // Tokyo contact, Wednesday 2026-03-04 10:00 JST = 01:00Z; in New York that is still 03-03 (not blacked out)
    expect(next(win, '2026-03-04T01:00:00.000Z', 'Asia/Tokyo')).toBe('2026-03-04T01:00:00.000Z');
    // From 05:00Z (03-04 00:00 in New York) the blackout lasts until 03-05 05:00Z, which is 14:00 JST: inside Tokyo's window
    expect(next(win, '2026-03-04T05:00:00.000Z', 'Asia/Tokyo')).toBe('2026-03-05T05:00:00.000Z');
    // From 08:00Z on 03-05 (17:00 JST, closed) the next opening is 09:00 JST on Friday 03-06
    expect(next(win, '2026-03-05T08:00:00.000Z', 'Asia/Tokyo')).toBe('2026-03-06T00:00:00.000Z');
    // Without the flag the contact's zone is ignored
    expect(next(w({ timezone: 'America/New_York' }), '2026-03-04T01:00:00.000Z', 'Asia/Tokyo')).toBe('2026-03-04T14:00:00.000Z');
    // A contact with no (or no valid) zone falls back to the campaign's
    expect(next(win, '2026-03-05T15:00:00.000Z', '')).toBe('2026-03-05T15:00:00.000Z');
  });

  it('is null when the window never opens', () => {
    const all = Array.from({ length: 900 }, (_, i) => new Date(Date.UTC(2026, 0, 1 + i)).toISOString().slice(0, 10));
    expect(next(w({ blackout_dates: all }), '2026-01-01T00:00:00.000Z')).toBeNull();
  });
});

describe('closingAfter', () => {
  it('is the window end of an open window, cut by a blackout day that starts before it', () => {
    expect(closingAfter(base, new Date('2026-03-04T10:00:00.000Z')).toISOString()).toBe('2026-03-04T17:00:00.000Z');
    const tokyo = w({ timezone: 'UTC', use_contact_timezone: true, window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], blackout_dates: ['2026-03-05'] });
    expect(closingAfter(tokyo, new Date('2026-03-04T22:00:00.000Z')).toISOString()).toBe('2026-03-04T23:59:00.000Z');
  });
});

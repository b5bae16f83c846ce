import { v7 as uuidv7 } from 'uuid';
import { resetTelephony } from '../../shared/adapters/telephony';
import { RenewalRunIncomplete, runRenewals, type RenewalRunOptions } from '../../shared/domain/billing/renewals';
import { listCharges } from '../../shared/domain/billing/service';
import { BuyBody, ImportBody } from '../../shared/domain/phone-numbers/schemas';
import {
  buyPhoneNumber,
  getPhoneNumber,
  importPhoneNumber,
  listAvailablePhoneNumbers,
  releasePhoneNumber,
} from '../../shared/domain/phone-numbers/service';
import { gsi2, keys } from '../../shared/db/keys';
import { getItem, putNew, transact } from '../../shared/db/store';
import { logger } from '../../shared/logger';
import { asFunction } from '../support/access';

logger.setLogLevel('SILENT');

// The renewal job reads every organization's due numbers. Other test files share this table and
// buy numbers today, so each test here buys at its own far-future time (only `Date` is faked,
// during the purchase) and runs the job around that time: no run here can reach their numbers.
const REAL_TIMERS = ['nextTick', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'hrtime', 'performance'] as const;

/** Buys the first listed 720 number for a new organization, the clock standing at `at`. */
async function buyAt(at: string) {
  const org = uuidv7();
  jest.useFakeTimers({ now: new Date(at), doNotFake: [...REAL_TIMERS] });
  try {
    const { items } = await listAvailablePhoneNumbers(org, { country: 'US', area_code: '720', limit: 1 });
    const number = await buyPhoneNumber(org, BuyBody.parse({ phone_number: items[0]!.phone_number, price: items[0]!.price }));
    return { org, number };
  } finally {
    jest.useRealTimers();
  }
}

const run = (now: string, options: Omit<RenewalRunOptions, 'now'> = {}) => asFunction('billing-renewals', () => runRenewals({ now: new Date(now), ...options }));

async function renewalsOf(org: string, numberId: string) {
  const { items } = await listCharges(org, { limit: 100, offset: 0 });
  return items.filter((c) => c.resource_id === numberId && c.reason === 'number_renewal');
}

beforeEach(() => {
  delete process.env.SIMULATED_CARRIER_FAIL;
  delete process.env.TELEPHONY_PROVIDER;
  resetTelephony();
});

describe('monthly renewals', () => {
  it('charges the month after the purchase once, moves next_renewal_at on, and charges nothing on a second run', async () => {
    // Prepare
    const { org, number } = await buyAt('2091-03-15T10:00:00.000Z');
    expect(number.next_renewal_at).toBe('2091-04-15T10:00:00.000Z');
    const { items: [purchase] } = await listCharges(org, { limit: 10, offset: 0 });
    expect(purchase).toMatchObject({ reason: 'number_purchase', period_start: '2091-03-15T10:00:00.000Z', period_end: '2091-04-15T10:00:00.000Z' });
    expect(await run('2091-04-15T09:59:59.999Z')).toMatchObject({ charged: 0 }); // not due yet
    // Act
    const first = await run('2091-04-15T10:00:00.000Z');
    // Assess
    expect(first).toMatchObject({ found: 1, charged: 1, numbersRenewed: 1, failed: 0 });
    const renewals = await renewalsOf(org, number.id);
    expect(renewals).toEqual([
      expect.objectContaining({
        amount: number.price, amount_units: Math.round(number.price! * 10_000), amount_scale: 4, currency: 'USD', reason: 'number_renewal',
        resource_type: 'phone_number', resource_id: number.id, phone_number: number.phone_number,
        period_start: '2091-04-15T10:00:00.000Z', period_end: '2091-05-15T10:00:00.000Z',
      }),
    ]);
    expect((await getPhoneNumber(org, number.id)).next_renewal_at).toBe('2091-05-15T10:00:00.000Z');
    expect(await getItem(keys.phoneNumber(org, number.id))).toMatchObject({ gsi2pk: 'RENEWAL#2091-05-15', periods_billed: 2 });

    const again = await run('2091-04-16T10:00:00.000Z');
    expect(again).toMatchObject({ found: 0, charged: 0 });
    expect(await renewalsOf(org, number.id)).toHaveLength(1);
    expect((await listCharges(org, { limit: 10, offset: 0 })).meta.total).toBe(2);
  });

  it('charges once when two runs race for the same number', async () => {
    // Prepare
    const { org, number } = await buyAt('2092-06-10T08:30:00.000Z');
    // Act
    const runs = await Promise.all([run('2092-07-10T09:00:00.000Z'), run('2092-07-10T09:00:00.000Z'), run('2092-07-11T00:00:00.000Z')]);
    // Assess
    expect(runs.reduce((n, r) => n + r.charged, 0)).toBe(1);
    expect(await renewalsOf(org, number.id)).toHaveLength(1);
    expect((await listCharges(org, { limit: 10, offset: 0 })).meta.total).toBe(2);
    expect((await getPhoneNumber(org, number.id)).next_renewal_at).toBe('2092-08-10T08:30:00.000Z');
  });

  it('never charges a released number: release takes it out of the due index', async () => {
    // Prepare
    const { org, number } = await buyAt('2093-02-01T00:00:00.000Z');
    // Act
    await releasePhoneNumber(org, number.id);
    const runs = [await run('2093-03-01T00:00:00.000Z'), await run('2093-04-01T00:00:00.000Z', { lookbackDays: 60 })];
    // Assess
    expect(runs.map((r) => r.charged)).toEqual([0, 0]);
    expect(await renewalsOf(org, number.id)).toEqual([]);
    const item = await getItem<Record<string, unknown>>(keys.phoneNumber(org, number.id));
    expect(item).toMatchObject({ status: 'released' });
    expect(item).not.toHaveProperty('gsi2pk');
    expect(item).not.toHaveProperty('next_renewal_at');
    expect(await getPhoneNumber(org, number.id)).not.toHaveProperty('next_renewal_at');
  });

  it('catches a number three months behind up period by period, in order, the day clamped to the month end', async () => {
    // Prepare: bought on Jan 31; the job missed three renewals (a window wider than the default, as after an outage)
    const { org, number } = await buyAt('2094-01-31T12:00:00.000Z');
    // Act
    const summary = await run('2094-04-30T12:00:00.000Z', { lookbackDays: 120 });
    // Assess
    expect(summary).toMatchObject({ charged: 3, numbersRenewed: 1, stillBehind: 0 });
    const { items } = await listCharges(org, { limit: 10, offset: 0 });
    expect(items.map((c) => [c.reason, c.period_start, c.period_end])).toEqual([
      ['number_purchase', '2094-01-31T12:00:00.000Z', '2094-02-28T12:00:00.000Z'],
      ['number_renewal', '2094-02-28T12:00:00.000Z', '2094-03-31T12:00:00.000Z'],
      ['number_renewal', '2094-03-31T12:00:00.000Z', '2094-04-30T12:00:00.000Z'],
      ['number_renewal', '2094-04-30T12:00:00.000Z', '2094-05-31T12:00:00.000Z'],
    ]);
    expect((await getPhoneNumber(org, number.id)).next_renewal_at).toBe('2094-05-31T12:00:00.000Z');
  });

  it('charges at most maxPeriodsPerNumber periods of one number per run; the next run continues', async () => {
    // Prepare
    const { org, number } = await buyAt('2095-05-20T00:00:00.000Z');
    // Act
    const first = await run('2095-08-20T00:00:00.000Z', { lookbackDays: 100, maxPeriodsPerNumber: 2 });
    const second = await run('2095-08-20T00:00:00.000Z', { lookbackDays: 100, maxPeriodsPerNumber: 2 });
    // Assess
    expect(first).toMatchObject({ charged: 2, stillBehind: 1 });
    expect(second).toMatchObject({ charged: 1, stillBehind: 0 });
    expect((await renewalsOf(org, number.id)).map((c) => c.period_start)).toEqual([
      '2095-06-20T00:00:00.000Z', '2095-07-20T00:00:00.000Z', '2095-08-20T00:00:00.000Z',
    ]);
  });

  it('renews the other numbers when one fails, then reports the failure', async () => {
    // Prepare: a broken number (its purchase time unreadable) due just before a good one
    const { org, number } = await buyAt('2096-09-09T09:00:00.000Z');
    const broken = { org: uuidv7(), id: uuidv7(), due: '2096-10-09T08:00:00.000Z' };
    await transact([putNew({
      ...keys.phoneNumber(broken.org, broken.id), entity: 'PHONE_NUMBER', id: broken.id, organization_id: broken.org, source: 'purchased',
      status: 'active', phone_number: '+17205550199', price: 1.15, purchased_at: 'not a time', next_renewal_at: broken.due,
      gsi2pk: gsi2.renewalsDue('2096-10-09'), gsi2sk: gsi2.renewalEntry(broken.due, broken.org, broken.id),
    })]);
    // Act
    const failure = await run('2096-10-09T10:00:00.000Z').catch((err: unknown) => err);
    // Assess
    expect(failure).toBeInstanceOf(RenewalRunIncomplete);
    expect((failure as RenewalRunIncomplete).summary).toMatchObject({ found: 2, charged: 1, failed: 1 });
    expect(await renewalsOf(org, number.id)).toHaveLength(1);
  });

  it('never bills an imported number', async () => {
    const org = uuidv7();
    const imported = await importPhoneNumber(org, ImportBody.parse({ phone: '+17205550188', type: 'sip' }));
    const item = await getItem<Record<string, unknown>>(keys.phoneNumber(org, imported.id));
    expect(item).not.toHaveProperty('gsi2pk');
    expect(imported).not.toHaveProperty('next_renewal_at');
  });
});

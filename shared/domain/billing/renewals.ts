import { clockNow } from '../../clock';
import { gsi2, keys, type Key } from '../../db/keys';
import { ConditionFailed, getItem, queryAll, transact, updateExisting } from '../../db/store';
import { logger } from '../../logger';
import type { PhoneNumberItem } from '../phone-numbers/model';
import { chargeWrite, renewalChargeId } from './service';

/**
 * Monthly renewal billing of purchased numbers.
 *
 * - A purchase pays the first month. The number then carries `next_renewal_at` (purchase + 1
 *   month) and `periods_billed` (1), and sits in the sparse due-renewals index on gsi2
 *   (`RENEWAL#<due day>`, sort `<next_renewal_at>#<org>#<id>`). Imported numbers never enter it.
 * - Periods are counted from the purchase time, not chained from the last renewal, so a number
 *   bought on Jan 31 renews on Feb 28 and then Mar 31 (the day clamped to the month's end, UTC).
 * - Each renewal is one transaction: the charge (its id derived from number and period, put
 *   with attribute_not_exists), `next_renewal_at` / `periods_billed` / index moved one month on,
 *   and the charges counter, conditioned on the number being `active` with the
 *   `next_renewal_at` read. A retry, a second run or a concurrent run can never charge twice;
 *   release removes the index attributes in its own transaction, so billing stops.
 */

/** Due-day partitions read back from today: a run missed for a few days still finds its numbers. */
export const DEFAULT_LOOKBACK_DAYS = 7;
/** Most periods one number is charged in one run; one further behind continues on the next run. */
export const MAX_PERIODS_PER_RUN = 12;
/** Widest window a run accepts (a manual catch-up after a long outage). */
const MAX_LOOKBACK_DAYS = 400;
/** Numbers renewed at once. */
const CONCURRENCY = 10;
/** Conditional failures tolerated on one number in one run (a concurrent run moving it on). */
const MAX_CONFLICTS = 5;

/** The attributes release removes so a number leaves the due-renewals index. */
export const RENEWAL_ATTRIBUTES = ['next_renewal_at', 'gsi2pk', 'gsi2sk'];

/** An ISO 8601 date-time with a zone (`Z` or an offset): what the platform stores. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

/**
 * `anchor` plus `months` calendar months, UTC, the day clamped to the month's end; ISO with
 * milliseconds. Plain UTC arithmetic (no zone, no DST), so no luxon: it would load with every
 * phone-number function (~70 KB parsed on each cold start).
 */
export function monthsAfter(anchor: string, months: number): string {
  const start = new Date(anchor);
  // Date would roll 2027-02-30 over into March: the written day must exist.
  const [y, m, d] = [0, 5, 8].map((at, i) => Number(anchor.slice(at, at + (i ? 2 : 4))));
  if (!ISO_TIME.test(anchor) || Number.isNaN(start.getTime()) || d! > new Date(Date.UTC(y!, m!, 0)).getUTCDate()) throw new Error(`Not an ISO time: ${anchor}`);
  const year = start.getUTCFullYear();
  const month = start.getUTCMonth() + months;
  // Day 0 of the month after is the target month's last day.
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const day = Math.min(start.getUTCDate(), lastDay);
  return new Date(Date.UTC(year, month, day, start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds(), start.getUTCMilliseconds())).toISOString();
}

/**
 * The renewal attributes of an active purchased number that has paid `periodsBilled` months
 * since `purchasedAt`: when the next month is due and its entry in the due-renewals index.
 */
export function renewalSchedule(orgId: string, id: string, purchasedAt: string, periodsBilled: number) {
  const next = monthsAfter(purchasedAt, periodsBilled);
  return {
    next_renewal_at: next,
    periods_billed: periodsBilled,
    gsi2pk: gsi2.renewalsDue(next.slice(0, 10)),
    gsi2sk: gsi2.renewalEntry(next, orgId, id),
  };
}

export interface RenewalRunOptions {
  /** The run's clock (tests); default the current time. */
  now?: Date;
  /** Days of due partitions before today to read; default 7, at most 400. */
  lookbackDays?: number;
  /** Periods one number may be charged in this run; default 12. */
  maxPeriodsPerNumber?: number;
  /** Asked between batches; true ends the run early (the next run continues). */
  shouldStop?: () => boolean;
}

export interface RenewalRunSummary {
  now: string;
  /** The due days read, oldest first. */
  days: string[];
  /** Index entries found due. */
  found: number;
  /** Renewal charges written by this run. */
  charged: number;
  /** Numbers this run charged at least once. */
  numbersRenewed: number;
  /** Numbers still due after `maxPeriodsPerNumber` charges (continued next run). */
  stillBehind: number;
  /** Numbers that failed (logged); the others went on. */
  failed: number;
  /** True when `shouldStop` ended the run before every due number was seen. */
  stopped: boolean;
}

/** Thrown at the end of a run in which some numbers failed, after every other number was handled. */
export class RenewalRunIncomplete extends Error {
  constructor(readonly summary: RenewalRunSummary) {
    super(`Billing renewals: ${summary.failed} number(s) failed; they are retried on the next run`);
  }
}

/**
 * The scheduled renewal run: reads the due-renewals partitions from (today − lookback) to today
 * (UTC), page by page, and renews every number due by `now`, a few at a time. Idempotent: run it
 * as often as you like, concurrently too. Logs its counts; throws `RenewalRunIncomplete` at the
 * end when some number failed, so the job's error alarm sees it.
 */
export async function runRenewals(options: RenewalRunOptions = {}): Promise<RenewalRunSummary> {
  const now = (options.now ?? clockNow()).toISOString();
  const maxPeriods = positiveInt(options.maxPeriodsPerNumber, MAX_PERIODS_PER_RUN);
  const summary: RenewalRunSummary = {
    now, days: dueDays(now, boundedLookback(options.lookbackDays)), found: 0, charged: 0, numbersRenewed: 0, stillBehind: 0, failed: 0, stopped: false,
  };

  const renewBatch = async (batch: Key[]) => {
    const results = await Promise.allSettled(batch.map((key) => renewNumber(key, now, maxPeriods)));
    results.forEach((result, i) => {
      if (result.status === 'rejected') {
        summary.failed++;
        logger.error('A number could not be renewed; the next run retries it', { key: batch[i], error: result.reason as Error });
        return;
      }
      summary.charged += result.value.charged;
      if (result.value.charged > 0) summary.numbersRenewed++;
      if (result.value.stillBehind) summary.stillBehind++;
    });
  };

  // Everything due sorts below `<now>$` ('$' follows '#'), so today's later entries are not read.
  const dueBy = `${now}$`;
  // A number renewed here moves to a later day, which this run may read next: handle it once.
  const seen = new Set<string>();
  for (const day of summary.days) {
    if (summary.stopped) break;
    let batch: Key[] = [];
    const entries = queryAll<Key>({ index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.renewalsDue(day), skName: 'gsi2sk', skBelow: dueBy }, ['pk', 'sk']);
    for await (const entry of entries) {
      const id = `${entry.pk}|${entry.sk}`;
      if (seen.has(id)) continue;
      seen.add(id);
      summary.found++;
      batch.push({ pk: entry.pk, sk: entry.sk });
      if (batch.length < CONCURRENCY) continue;
      await renewBatch(batch);
      batch = [];
      if (options.shouldStop?.()) {
        summary.stopped = true;
        break;
      }
    }
    await renewBatch(batch);
  }

  logger.info('Billing renewals run', { ...summary, days: `${summary.days[0]}..${summary.days[summary.days.length - 1]}` });
  if (summary.failed > 0) throw new RenewalRunIncomplete(summary);
  return summary;
}

const isDue = (item: PhoneNumberItem, now: string) =>
  item.status === 'active' && item.source === 'purchased' && typeof item.next_renewal_at === 'string' && item.next_renewal_at <= now &&
  typeof item.price === 'number' && typeof item.purchased_at === 'string';

/**
 * Charges one number period by period until it is paid up to `now` (at most `maxPeriods`). Reads
 * the item strongly consistent first: the index is eventually consistent and may lag a renewal or
 * a release. A failed condition means another run or a release moved it: read again and decide.
 */
async function renewNumber(key: Key, now: string, maxPeriods: number): Promise<{ charged: number; stillBehind: boolean }> {
  let charged = 0;
  let conflicts = 0;
  let item = await getItem<PhoneNumberItem>(key);
  while (item && isDue(item, now)) {
    if (charged >= maxPeriods) return { charged, stillBehind: true };
    try {
      const write = renewalWrite(item, now);
      await transact([write.charge.item, write.number], [write.charge.counter]);
      charged++;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (++conflicts > MAX_CONFLICTS) throw new Error('The number kept changing during its renewal', { cause: err });
    }
    item = await getItem<PhoneNumberItem>(key);
  }
  return { charged, stillBehind: false };
}

/** The charge for the period starting at `next_renewal_at` and the number moved on one month. */
function renewalWrite(item: PhoneNumberItem, now: string) {
  const orgId = item.organization_id;
  const start = item.next_renewal_at!;
  // Counted from the purchase (see above), never chained from the last renewal.
  const schedule = renewalSchedule(orgId, item.id, item.purchased_at!, (item.periods_billed ?? 1) + 1);
  const end = schedule.next_renewal_at;
  const charge = chargeWrite(orgId, {
    id: renewalChargeId(item.id, start),
    amount: item.price!,
    reason: 'number_renewal',
    description: `Monthly renewal of ${item.phone_number} (${start.slice(0, 10)} to ${end.slice(0, 10)})`,
    resourceType: 'phone_number',
    resourceId: item.id,
    phoneNumber: item.phone_number,
    period: { start, end },
    // Dated when the period starts, whenever the run books it, so a retry writes the same charge.
    at: start,
  });
  const number = updateExisting(keys.phoneNumber(orgId, item.id), { ...schedule, updated_at: now }, {
    condition: '#st = :active AND #next = :next',
    names: { '#st': 'status', '#next': 'next_renewal_at' },
    values: { ':active': 'active', ':next': start },
  });
  return { charge, number };
}

/** The UTC days from `lookback` days before `now` to `now`, oldest first. */
function dueDays(now: string, lookback: number): string[] {
  const today = Date.parse(`${now.slice(0, 10)}T00:00:00.000Z`);
  return Array.from({ length: lookback + 1 }, (_, i) => new Date(today - (lookback - i) * 86_400_000).toISOString().slice(0, 10));
}

function boundedLookback(days: number | undefined): number {
  if (typeof days !== 'number' || !Number.isInteger(days) || days < 0) return DEFAULT_LOOKBACK_DAYS;
  return Math.min(days, MAX_LOOKBACK_DAYS);
}

const positiveInt = (n: number | undefined, fallback: number) => (typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : fallback);

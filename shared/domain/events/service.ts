import { gsi1, keys, Prefix } from '../../db/keys';
import { countRange, queryRangePage, type RangeQuery } from '../../db/filtered-query';
import { getItem } from '../../db/store';
import { NotFoundError, ValidationError } from '../../errors';
import { listResult } from '../common/list-result';
import type { EventListInput } from './schemas';
import type { PlatformEvent } from './types';

interface EventItem {
  body: string;
  ttl: number;
}

const nowSeconds = () => Math.floor(Date.now() / 1000);
const view = (item: EventItem) => JSON.parse(item.body) as PlatformEvent;

/**
 * The smallest (`upper` false) or largest UUID v7 sort value of an instant: a v7 id starts with
 * its creation time in milliseconds (48 bits, hex), so a time range is a key range of ids.
 */
export function idBoundOf(at: string, upper: boolean): string {
  const hex = Date.parse(at).toString(16).padStart(12, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${upper ? '~' : '0'}`;
}

/** One event of the organization, or 404 (also once it is older than 30 days). */
export async function getEvent(orgId: string, id: string): Promise<PlatformEvent> {
  const item = await getItem<EventItem>(keys.event(orgId, id));
  if (!item || item.ttl <= nowSeconds()) throw new NotFoundError('Event', id);
  return view(item);
}

/**
 * The organization's events, newest first. Without `type`, a range of the organization's
 * partition (sk `EVENT#<id>`); with it, the type's gsi1 partition. `from`/`to` become id bounds.
 * The total is counted over the same range (events expire, so no counter can stay exact).
 */
export async function listEvents(orgId: string, q: EventListInput) {
  if (q.from && q.to && q.to < q.from) throw ValidationError.field('to', 'must not be before from');
  // '0' sorts at or below every id (a key condition may not hold an empty string).
  const lower = q.from ? idBoundOf(q.from, false) : '0';
  const upper = q.to ? idBoundOf(q.to, true) : '~';
  // TTL deletion lags expiry by up to days: expired events are filtered so lists and totals match GET.
  const filter = { expression: '#ttl > :now', names: { '#ttl': 'ttl' }, values: { ':now': nowSeconds() } };
  const range: RangeQuery = q.type
    ? { index: 'gsi1', pkName: 'gsi1pk', pkValue: gsi1.eventsOfType(orgId, q.type), skName: 'gsi1sk', skFrom: lower, skTo: upper, descending: true, filter }
    : { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skFrom: `${Prefix.event}${lower}`, skTo: `${Prefix.event}${upper}`, descending: true, filter };
  const [page, total] = await Promise.all([queryRangePage<EventItem>(range, q), countRange(range)]);
  return listResult({ items: page.items.map(view), nextCursor: page.nextCursor }, total, q);
}

import { collections, keys, Prefix } from '../../db/keys';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { ConditionFailed, deleteExisting, getItem, putNew, stripKeys, transact, type PageRequest } from '../../db/store';
import { ConflictError, NotFoundError } from '../../errors';
import { listResult } from '../common/list-result';
import { listCollection } from '../common/collection';
import { phoneRules } from '../common/phone-field';
import { DNC_MESSAGES, dncFilterPhone, type AddDncInput, type DialBlock, type DncEntry } from './schemas';

export { DNC_MESSAGES, type DialBlock };

type DncItem = DncEntry & { pk: string; sk: string; entity: string; version?: number };

const ENTITY = 'DNC';

const view = (item: DncItem): DncEntry => stripKeys(item) as DncEntry;

/**
 * Puts a number on the organization's do-not-call list. The number is normalized to E.164 first,
 * so every written form of one number is one entry. A number already listed answers its existing
 * entry unchanged (the first reason and source stay): adding is idempotent.
 */
export async function addDncEntry(orgId: string, input: AddDncInput): Promise<DncEntry> {
  const phone = (await phoneRules()).normalizeE164(input.phone, { defaultCountry: input.country, field: 'phone' });
  const key = keys.dnc(orgId, phone);
  const entry: DncEntry = { phone, reason: input.reason, source: input.source, created_at: new Date().toISOString() };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact([putNew({ ...key, entity: ENTITY, ...entry })], [{ orgId, collection: collections.dnc, delta: 1 }]);
      return entry;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      // Either the number is listed already, or the transaction lost a race on the counter.
      const existing = await getItem<DncItem>(key);
      if (existing) return view(existing);
      await pause(attempt);
    }
  }
  throw new ConflictError('Too many concurrent changes to the do-not-call list; retry', { phone });
}

/** The list in E.164 order, or (with `phone`) the one entry for that number. */
export async function listDncEntries(orgId: string, query: PageRequest & { phone?: string; country?: string }) {
  if (query.phone === undefined) return listCollection(orgId, Prefix.dnc, collections.dnc, query, view);
  // The schema has already checked that the filter normalizes.
  const item = await getItem<DncItem>(keys.dnc(orgId, (await dncFilterPhone(query.phone, query.country))!));
  const skipped = query.cursor || (query.offset ?? 0) > 0;
  const items = item && !skipped ? [view(item)] : [];
  return listResult({ items, nextCursor: null }, item ? 1 : 0, query);
}

/** Takes a number off the list; 404 when it is not on it. */
export async function removeDncEntry(orgId: string, phone: string): Promise<void> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact([deleteExisting(keys.dnc(orgId, phone))], [{ orgId, collection: collections.dnc, delta: -1 }]);
      return;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (!(await getItem<DncItem>(keys.dnc(orgId, phone)))) throw new NotFoundError('Do-not-call entry', phone);
      await pause(attempt);
    }
  }
  throw new ConflictError('Too many concurrent changes to the do-not-call list; retry', { phone });
}

/**
 * Whether a number may be dialed for this organization: `opt_out` when the contact opted out
 * (checked first, from the contact the caller already holds), `do_not_call` when the number is on
 * the list (one strongly consistent GetItem, so a number listed a moment ago is refused), else null.
 */
export async function dialBlock(orgId: string, phoneE164: string, contact?: { opt_out?: boolean } | null): Promise<DialBlock | null> {
  if (contact?.opt_out) return 'opt_out';
  return blockOf(contact, !!(await getItem(keys.dnc(orgId, phoneE164))));
}

/** dialBlock's rule on what the caller read itself (the contact, whether the number is listed): opt-out first, then the list. */
export function blockOf(contact: { opt_out?: boolean } | null | undefined, listed: boolean): DialBlock | null {
  if (contact?.opt_out) return 'opt_out';
  return listed ? 'do_not_call' : null;
}

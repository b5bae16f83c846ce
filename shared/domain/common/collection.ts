import { keys } from '../../db/keys';
import { getItem, queryPage, readCounter, type PageRequest } from '../../db/store';
import type { Key } from '../../db/keys';
import { NotFoundError, ValidationError } from '../../errors';
import { listResult } from './list-result';

/** One page of an organization's collection (items under a sort-key prefix) with its exact total. */
export async function listCollection<T extends object, V>(
  orgId: string,
  prefix: string,
  collection: string,
  query: PageRequest,
  view: (item: T) => V,
  /** Items to show; others (a tool being deleted) are skipped and not counted. */
  keep: (item: T) => boolean = () => true,
) {
  const [page, total] = await Promise.all([
    queryPage<T>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: prefix }, query),
    readCounter(orgId, collection),
  ]);
  return listResult({ items: page.items.filter(keep).map(view), nextCursor: page.nextCursor }, total, query);
}

/** One item by key, or a 404 naming the resource. */
export async function getOr404<T extends object>(key: Key, resource: string, id: string): Promise<T> {
  const item = await getItem<T>(key);
  if (!item) throw new NotFoundError(resource, id);
  return item;
}

/** PATCH bodies must change something. */
export function requireSomeField(input: object): void {
  if (Object.keys(input).length === 0) throw new ValidationError('Body must contain at least one field to update', [{ path: 'body', message: 'is empty' }]);
}

import type { Page } from '../../db/store';

/**
 * What a list operation returns: one page and the exact total. A list's shape belongs to the
 * domain (services build it from a store page), not to HTTP: the success-envelope middleware
 * (shared/http/middleware/success-envelope.ts) only recognizes it by its marker and turns it
 * into `data` and `meta`.
 */

const LIST = Symbol('list');

/** Paging of a list: the exact total, the page's size and offset, and the cursor of the next page. */
export interface ListMeta {
  total: number;
  limit: number;
  offset: number;
  next_cursor: string | null;
}

/** One page of a list and its paging, marked as a list result. */
export interface ListResult<T> {
  [LIST]: true;
  items: T[];
  meta: ListMeta;
}

/** Builds a list result from a store page and the query's paging. */
export function listResult<T>(page: Page<T>, total: number, paging: { limit: number; offset?: number }): ListResult<T> {
  return {
    [LIST]: true,
    items: page.items,
    meta: { total, limit: paging.limit, offset: paging.offset ?? 0, next_cursor: page.nextCursor },
  };
}

/** Whether a handler's value is a list result (the success envelope then adds `meta`). */
export function isListResult(value: unknown): value is ListResult<unknown> {
  return typeof value === 'object' && value !== null && LIST in value;
}

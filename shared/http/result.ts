import type { ListMeta } from './envelope';
import type { Page } from '../db/store';

const LIST = Symbol('list');

/** What a list operation returns: one page and the exact total. */
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

export function isListResult(value: unknown): value is ListResult<unknown> {
  return typeof value === 'object' && value !== null && LIST in value;
}

const RAW = Symbol('raw');

/** A response body that is not JSON (TwiML for the carrier), returned by a `rawResponse` operation. */
export interface RawBody {
  [RAW]: true;
  contentType: string;
  body: string;
  /** 200 unless given (304 for a script the browser already holds). */
  statusCode?: number;
  /** `body` is base64 of bytes (a gzip-encoded script). */
  base64?: boolean;
}

export function rawBody(contentType: string, body: string, options: { statusCode?: number; base64?: boolean } = {}): RawBody {
  return { [RAW]: true, contentType, body, ...options };
}

export function isRawBody(value: unknown): value is RawBody {
  return typeof value === 'object' && value !== null && RAW in value;
}

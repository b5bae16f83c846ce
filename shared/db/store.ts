import {
  BatchWriteCommand,
  DeleteCommand,
  PutCommand,
  UpdateCommand,
  type UpdateCommandInput,
  GetCommand,
  QueryCommand,
  TransactWriteCommand,
  type QueryCommandInput,
  type TransactWriteCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException, TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from './client';
import { keys, type Key } from './keys';
import { ItemTooLargeError, ValidationError } from '../errors';
import { CONFLICT_ATTEMPTS, isTransactionConflict, pause, TransactionConflict } from './retry';

type Item = Record<string, unknown>;
/** One write of a TransactWriteItems call. */
export type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** A counter change written in the same transaction as the item it counts. */
export interface CounterDelta {
  orgId: string;
  collection: string;
  delta: number;
}

/**
 * A condition another item must meet for a write to land (a referenced tool exists…).
 * `onFail` is thrown when it does not.
 */
export interface Guard {
  key: Key;
  condition?: string;
  values?: Record<string, unknown>;
  names?: Record<string, string>;
  onFail: () => Error;
}

/** Thrown by `transact` when the main write's own condition fails (never for a transaction conflict: see TransactionConflict). */
export class ConditionFailed extends Error {}

export { TransactionConflict, isTransactionConflict } from './retry';

/** Sends a write again while DynamoDB cancels it for a transaction conflict (same request: nothing of it landed), then gives up with TransactionConflict. */
async function retryingConflicts<T>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send();
    } catch (err) {
      if (!isTransactionConflict(err)) throw err;
      if (attempt + 1 >= CONFLICT_ATTEMPTS) throw new TransactionConflict({ cause: err });
      await pause(attempt);
    }
  }
}

/** For `.catch()` on a write whose condition failing means there is nothing left to do. */
export function ignoreConditionFailed(err: unknown): void {
  if (!(err instanceof ConditionFailed)) throw err;
}

/** Strips storage attributes (keys, index keys, version) from an item before it leaves the store. */
export function stripKeys<T extends Item>(item: T): Omit<T, 'pk' | 'sk' | 'gsi1pk' | 'gsi1sk' | 'gsi2pk' | 'gsi2sk' | 'version' | 'entity' | 'ttl'> {
  const { pk, sk, gsi1pk, gsi1sk, gsi2pk, gsi2sk, version, entity, ttl, ...rest } = item;
  void pk; void sk; void gsi1pk; void gsi1sk; void gsi2pk; void gsi2sk; void version; void entity; void ttl;
  return rest as never;
}

/** One GetItem; strongly consistent so a read after a write sees it. */
export async function getItem<T extends object = Item>(key: Key, consistent = true): Promise<T | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: consistent }));
  return out.Item as T | undefined;
}

export function counterUpdate(c: CounterDelta): TransactItem {
  return {
    Update: {
      TableName: tableName(),
      Key: keys.counter(c.orgId, c.collection),
      UpdateExpression: 'ADD #n :d',
      ExpressionAttributeNames: { '#n': 'n' },
      ExpressionAttributeValues: { ':d': c.delta },
    },
  };
}

/**
 * A counter increment that only lands while the count is below `cap`: put it in a transaction's
 * main writes, so a failed condition (ConditionFailed) means the cap is reached, race-free.
 */
export function cappedCounterIncrement(orgId: string, collection: string, cap: number): TransactItem {
  return {
    Update: {
      TableName: tableName(),
      Key: keys.counter(orgId, collection),
      UpdateExpression: 'ADD #n :one',
      ConditionExpression: 'attribute_not_exists(#n) OR #n < :cap',
      ExpressionAttributeNames: { '#n': 'n' },
      ExpressionAttributeValues: { ':one': 1, ':cap': cap },
    },
  };
}

function guardCheck(g: Guard): TransactItem {
  return {
    ConditionCheck: {
      TableName: tableName(),
      Key: g.key,
      ConditionExpression: g.condition ?? 'attribute_exists(pk)',
      ...(g.values ? { ExpressionAttributeValues: g.values } : {}),
      ...(g.names ? { ExpressionAttributeNames: g.names } : {}),
    },
  };
}

/** DynamoDB's item size limit. */
export const MAX_ITEM_BYTES = 400 * 1024;

/** An upper estimate of a value's stored size: UTF-8 strings and keys, 21 bytes a number, a byte of overhead each. */
export function storedBytes(value: unknown): number {
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number' || typeof value === 'bigint') return 21;
  if (value === null || value === undefined || typeof value !== 'object') return 1;
  if (value instanceof Uint8Array) return value.byteLength;
  const entries = value instanceof Map || value instanceof Set ? [...value.entries()] : Array.isArray(value) ? value.map((v) => ['', v]) : Object.entries(value);
  return entries.reduce((sum, [k, v]) => sum + 1 + (typeof k === 'string' ? Buffer.byteLength(k, 'utf8') : 0) + storedBytes(v), 3);
}

/** A write whose item could not be stored answers 413 before it reaches DynamoDB (which would fail it with a 500). */
function assertStorable(item: TransactItem): void {
  const values = item.Put?.Item ?? item.Update?.ExpressionAttributeValues;
  if (values && storedBytes(values) > MAX_ITEM_BYTES) {
    throw new ItemTooLargeError(MAX_ITEM_BYTES);
  }
}

/**
 * Runs one transaction: the main write first, then counters and guards. A failed guard
 * throws its own error; a failed main condition throws ConditionFailed. A conflict with another
 * transaction (references.md: retryable, not a failed condition) is sent again, and after
 * CONFLICT_ATTEMPTS throws TransactionConflict, never ConditionFailed.
 */
export async function transact(main: TransactItem[], counters: CounterDelta[] = [], guards: Guard[] = []): Promise<void> {
  main.forEach(assertStorable);
  const items = [...main, ...counters.filter((c) => c.delta !== 0).map(counterUpdate), ...guards.map(guardCheck)];
  if (items.length === 1) return single(items[0]);
  try {
    await retryingConflicts(() => db().send(new TransactWriteCommand({ TransactItems: items })));
  } catch (err) {
    if (err instanceof TransactionCanceledException) {
      const reasons = err.CancellationReasons ?? [];
      const failed = reasons.findIndex((r) => r.Code === 'ConditionalCheckFailed');
      if (failed >= 0 && failed < main.length) throw new ConditionFailed('condition failed', { cause: err });
      const guardIndex = failed - main.length - counters.filter((c) => c.delta !== 0).length;
      if (failed >= 0 && guards[guardIndex]) throw guards[guardIndex].onFail();
    }
    throw err;
  }
}

/**
 * A lone write skips the transaction: half the write cost. It can still meet a transaction in
 * flight on its item (TransactionConflictException): the document client retries that for every
 * lone write of the code base, raw ones included (shared/db/client.ts), and answers
 * TransactionConflict when it lasts.
 */
async function single(item: TransactItem): Promise<void> {
  try {
    if (item.Put) await db().send(new PutCommand(item.Put));
    else if (item.Update) await db().send(new UpdateCommand(item.Update as UpdateCommandInput));
    else if (item.Delete) await db().send(new DeleteCommand(item.Delete));
    else await retryingConflicts(() => db().send(new TransactWriteCommand({ TransactItems: [item] })));
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) throw new ConditionFailed('condition failed', { cause: err });
    if (err instanceof TransactionCanceledException && err.CancellationReasons?.some((r) => r.Code === 'ConditionalCheckFailed')) throw new ConditionFailed('condition failed', { cause: err });
    throw err;
  }
}

/**
 * Deletes items by key, 25 per BatchWriteItem, retrying what DynamoDB leaves unprocessed.
 * Unconditional: for cleanup of items nothing else refers to (missing keys are fine).
 */
export async function deleteKeys(keysToDelete: Key[]): Promise<void> {
  for (let i = 0; i < keysToDelete.length; i += 25) {
    let requests = keysToDelete.slice(i, i + 25).map((k) => ({ DeleteRequest: { Key: { pk: k.pk, sk: k.sk } } }));
    for (let attempt = 0; requests.length; attempt++) {
      if (attempt > 0) await pause(attempt);
      const out = await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: requests } }));
      requests = (out.UnprocessedItems?.[tableName()] ?? []) as typeof requests;
    }
  }
}

/**
 * Puts items, 25 per BatchWriteItem, retrying what DynamoDB leaves unprocessed. Unconditional:
 * for copies nothing else writes (a run's frozen tests). Each must fit an item (413 otherwise).
 */
export async function putItems(items: Item[]): Promise<void> {
  for (const item of items) if (storedBytes(item) > MAX_ITEM_BYTES) throw new ItemTooLargeError(MAX_ITEM_BYTES);
  for (let i = 0; i < items.length; i += 25) {
    let requests = items.slice(i, i + 25).map((item) => ({ PutRequest: { Item: item } }));
    for (let attempt = 0; requests.length; attempt++) {
      if (attempt > 0) await pause(attempt);
      const out = await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: requests } }));
      requests = (out.UnprocessedItems?.[tableName()] ?? []) as typeof requests;
    }
  }
}

/** A Put that only lands when the key is new. */
export function putNew(item: Item): TransactItem {
  return { Put: { TableName: tableName(), Item: item, ConditionExpression: 'attribute_not_exists(pk)' } };
}

/** An update of the named fields of an existing item; bumps `version` and `updated_at`. */
export function updateExisting(
  key: Key,
  set: Item,
  opts: { remove?: string[]; condition?: string; values?: Item; names?: Record<string, string> } = {},
): TransactItem {
  const names: Record<string, string> = { ...opts.names, '#v': 'version' };
  const values: Item = { ...opts.values, ':one': 1 };
  const sets: string[] = [];
  Object.entries(set).forEach(([field, value], i) => {
    names[`#f${i}`] = field;
    values[`:f${i}`] = value;
    sets.push(`#f${i} = :f${i}`);
  });
  const removes = (opts.remove ?? []).map((field, i) => {
    names[`#r${i}`] = field;
    return `#r${i}`;
  });
  const expr = [`SET ${[...sets, '#v = if_not_exists(#v, :zero) + :one'].join(', ')}`, removes.length ? `REMOVE ${removes.join(', ')}` : '']
    .filter(Boolean)
    .join(' ');
  values[':zero'] = 0;
  return {
    Update: {
      TableName: tableName(),
      Key: key,
      UpdateExpression: expr,
      ConditionExpression: ['attribute_exists(pk)', opts.condition].filter(Boolean).join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

export function deleteExisting(key: Key, condition?: string, values?: Item, names?: Record<string, string>): TransactItem {
  return {
    Delete: {
      TableName: tableName(),
      Key: key,
      ConditionExpression: ['attribute_exists(pk)', condition].filter(Boolean).join(' AND '),
      ...(values ? { ExpressionAttributeValues: values } : {}),
      ...(names ? { ExpressionAttributeNames: names } : {}),
    },
  };
}

/** Reads an exact collection count kept by `transact`. */
export async function readCounter(orgId: string, collection: string): Promise<number> {
  const item = await getItem<{ n?: number }>(keys.counter(orgId, collection));
  return Math.max(0, item?.n ?? 0);
}

export interface PageRequest {
  limit: number;
  offset?: number;
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

/** What a collection query reads: a partition (of the table or an index) and a sort-key prefix. */
export interface CollectionQuery {
  index?: string;
  pkName: string;
  pkValue: string;
  skName?: string;
  skPrefix?: string;
  /** Only sort keys strictly below this value (a range read such as "due by now"). */
  skBelow?: string;
  /** Newest first when true. */
  descending?: boolean;
}

/** What a cursor is checked against: the partition (and sort-key prefix) of the list that issued it. */
export interface CursorScope {
  pkName: string;
  pkValue: string;
  skName?: string;
  skPrefix?: string;
}

/** An opaque cursor for a LastEvaluatedKey. */
export function encodeCursor(key: Item): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/**
 * The LastEvaluatedKey inside a cursor. A cursor is only honoured inside the partition (and
 * prefix) it was issued for, so it can never be used to read another organization's items.
 */
export function decodeCursor(cursor: string, q: CursorScope): Item {
  let key: Item | undefined;
  try {
    key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as Item;
  } catch {
    key = undefined;
  }
  const sk = q.skName ? key?.[q.skName] : undefined;
  if (!key || typeof key !== 'object' || key[q.pkName] !== q.pkValue || (q.skPrefix && (typeof sk !== 'string' || !sk.startsWith(q.skPrefix)))) {
    throw ValidationError.field('cursor', 'is not a cursor returned by this list');
  }
  return key;
}

/** The sort-key part of a key condition: a prefix, everything below a value, or an inclusive range. */
export interface SortKeyCondition {
  skName?: string;
  skPrefix?: string;
  skBelow?: string;
  skFrom?: string;
  skTo?: string;
}

/** Builds a Query's key condition, names and values for a partition and an optional sort-key condition. */
export function keyCondition(q: { pkName: string; pkValue: string } & SortKeyCondition) {
  const names: Record<string, string> = { '#pk': q.pkName };
  const values: Item = { ':pk': q.pkValue };
  let expression = '#pk = :pk';
  if (q.skName && q.skPrefix) {
    names['#sk'] = q.skName;
    values[':sk'] = q.skPrefix;
    expression += ' AND begins_with(#sk, :sk)';
  } else if (q.skName && q.skBelow) {
    names['#sk'] = q.skName;
    values[':sk'] = q.skBelow;
    expression += ' AND #sk < :sk';
  } else if (q.skName && (q.skFrom !== undefined || q.skTo !== undefined)) {
    names['#sk'] = q.skName;
    values[':skf'] = q.skFrom ?? '';
    // '~' sorts after every character our keys use, so an open upper end is the whole partition.
    values[':skt'] = q.skTo ?? '~';
    expression += ' AND #sk BETWEEN :skf AND :skt';
  }
  return { expression, names, values };
}

function baseQuery(q: CollectionQuery): QueryCommandInput {
  const { expression, names, values } = keyCondition(q);
  return {
    TableName: tableName(),
    ...(q.index ? { IndexName: q.index } : {}),
    KeyConditionExpression: expression,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ScanIndexForward: !q.descending,
  };
}

/**
 * One page of a collection. `cursor` continues where the last page ended (cost independent of
 * depth); `offset` skips items by reading only their keys first, as the spec's paging asks.
 */
export async function queryPage<T extends object>(q: CollectionQuery, page: PageRequest): Promise<Page<T>> {
  const base = baseQuery(q);
  let startKey: Item | undefined = page.cursor ? decodeCursor(page.cursor, q) : undefined;
  if (!page.cursor && page.offset) {
    let toSkip = page.offset;
    const keyNames = ['pk', 'sk', ...(q.index ? [q.pkName, q.skName ?? ''] : [])].filter(Boolean);
    while (toSkip > 0) {
      const out = await db().send(
        new QueryCommand({
          ...base,
          Limit: toSkip,
          ExclusiveStartKey: startKey,
          ProjectionExpression: keyNames.map((_, i) => `#k${i}`).join(', '),
          ExpressionAttributeNames: { ...base.ExpressionAttributeNames, ...Object.fromEntries(keyNames.map((k, i) => [`#k${i}`, k])) },
        }),
      );
      toSkip -= out.Items?.length ?? 0;
      startKey = out.LastEvaluatedKey;
      if (!startKey) return { items: [], nextCursor: null };
    }
  }
  const items: T[] = [];
  let lastKey: Item | undefined = startKey;
  do {
    const out = await db().send(new QueryCommand({ ...base, Limit: page.limit - items.length, ExclusiveStartKey: lastKey }));
    items.push(...((out.Items ?? []) as T[]));
    lastKey = out.LastEvaluatedKey;
  } while (lastKey && items.length < page.limit);
  return { items, nextCursor: lastKey ? encodeCursor(lastKey) : null };
}

/** Every item of a collection, page by page (bounded internal work such as cascades). */
export async function* queryAll<T extends object>(q: CollectionQuery, projection?: string[], consistent = false): AsyncGenerator<T> {
  // Strongly consistent reads exist only on the table, not on a global index.
  const base = { ...baseQuery(q), ...(consistent && !q.index ? { ConsistentRead: true } : {}) };
  let startKey: Item | undefined;
  do {
    const out = await db().send(
      new QueryCommand({
        ...base,
        ExclusiveStartKey: startKey,
        ...(projection
          ? {
              ProjectionExpression: projection.map((_, i) => `#p${i}`).join(', '),
              ExpressionAttributeNames: { ...base.ExpressionAttributeNames, ...Object.fromEntries(projection.map((p, i) => [`#p${i}`, p])) },
            }
          : {}),
      }),
    );
    for (const item of out.Items ?? []) yield item as T;
    startKey = out.LastEvaluatedKey;
  } while (startKey);
}

/**
 * Adds `deltas` to numeric members of an existing item (`ADD`, so concurrent writers never lose an
 * increment), setting `set` too; bumps `version`. For counts kept on the item they describe (a test
 * run's results, say), written in the same transaction as what they count.
 */
export function addToExisting(key: Key, deltas: Record<string, number>, set: Item = {}, opts: { condition?: string; values?: Item; names?: Record<string, string> } = {}): TransactItem {
  const names: Record<string, string> = { ...opts.names, '#v': 'version' };
  const values: Item = { ...opts.values, ':one': 1 };
  const adds = Object.entries(deltas).map(([field, delta], i) => {
    names[`#a${i}`] = field;
    values[`:a${i}`] = delta;
    return `#a${i} :a${i}`;
  });
  const sets = Object.entries(set).map(([field, value], i) => {
    names[`#s${i}`] = field;
    values[`:s${i}`] = value;
    return `#s${i} = :s${i}`;
  });
  adds.push('#v :one');
  return {
    Update: {
      TableName: tableName(),
      Key: key,
      UpdateExpression: [sets.length ? `SET ${sets.join(', ')}` : '', `ADD ${adds.join(', ')}`].filter(Boolean).join(' '),
      ConditionExpression: ['attribute_exists(pk)', opts.condition].filter(Boolean).join(' AND '),
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

import { BatchGetCommand, BatchWriteCommand, QueryCommand, type QueryCommandInput, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from './client';
import { decodeCursor, encodeCursor, keyCondition, type Page, type PageRequest } from './store';

type Item = Record<string, unknown>;

/**
 * A key-range query with an optional filter: searches and filtered lists whose totals cannot
 * come from a counter. The key condition is either a prefix or an inclusive range of the sort
 * key; the filter runs on the items the condition reaches, never on the whole partition.
 */
export interface RangeQuery {
  index?: 'gsi1' | 'gsi2';
  pkName: string;
  pkValue: string;
  skName: string;
  /** begins_with(sk, prefix) … */
  skPrefix?: string;
  /** … or sk BETWEEN from AND to (either side optional). */
  skFrom?: string;
  skTo?: string;
  filter?: { expression: string; names?: Record<string, string>; values?: Item };
  descending?: boolean;
  consistent?: boolean;
}

function input(q: RangeQuery): QueryCommandInput {
  const { expression, names, values } = keyCondition(q);
  return {
    TableName: tableName(),
    ...(q.index ? { IndexName: q.index } : {}),
    KeyConditionExpression: expression,
    ...(q.filter ? { FilterExpression: q.filter.expression } : {}),
    ExpressionAttributeNames: { ...names, ...q.filter?.names },
    ExpressionAttributeValues: { ...values, ...q.filter?.values },
    ScanIndexForward: !q.descending,
    ...(q.consistent && !q.index ? { ConsistentRead: true } : {}),
  };
}

/**
 * One page of the items a range query matches after its filter. `offset` skips matching
 * items (read and dropped, as the filter must see them); `cursor` continues where a page ended.
 */
export async function queryRangePage<T extends object>(q: RangeQuery, page: PageRequest): Promise<Page<T>> {
  const base = input(q);
  let startKey: Item | undefined = page.cursor ? decodeCursor(page.cursor, q) : undefined;
  let toSkip = page.cursor ? 0 : (page.offset ?? 0);
  const items: T[] = [];
  do {
    const want = toSkip + page.limit - items.length;
    const out = await db().send(new QueryCommand({ ...base, Limit: Math.min(1000, want), ExclusiveStartKey: startKey }));
    let got = (out.Items ?? []) as T[];
    if (toSkip) {
      const skipped = Math.min(toSkip, got.length);
      got = got.slice(skipped);
      toSkip -= skipped;
    }
    items.push(...got.slice(0, page.limit - items.length));
    startKey = out.LastEvaluatedKey;
  } while (startKey && (toSkip > 0 || items.length < page.limit));
  return { items, nextCursor: startKey ? encodeCursor(startKey) : null };
}

/** The exact number of items a range query matches after its filter (Select COUNT, page by page). */
export async function countRange(q: RangeQuery): Promise<number> {
  const base = input(q);
  let total = 0;
  let startKey: Item | undefined;
  do {
    const out = await db().send(new QueryCommand({ ...base, Select: 'COUNT', ExclusiveStartKey: startKey }));
    total += out.Count ?? 0;
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return total;
}

/** Up to `limit` items of a range query (bounded reads such as a timeline or a busy list). */
export async function queryRange<T extends object>(q: RangeQuery, limit: number): Promise<T[]> {
  return (await queryRangePage<T>(q, { limit })).items;
}

/**
 * Deletes every item of one partition in batches of 25 (BatchWriteItem), retrying unprocessed
 * items. Used for a deleted parent's history, which nothing can reach once the parent is gone.
 */
export async function deletePartition(pk: string): Promise<number> {
  let deleted = 0;
  for (;;) {
    const out = await db().send(
      new QueryCommand({
        TableName: tableName(),
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': 'pk', '#sk': 'sk' },
        ExpressionAttributeValues: { ':pk': pk },
        ProjectionExpression: '#pk, #sk',
        Limit: 500,
        ConsistentRead: true,
      }),
    );
    const keys = (out.Items ?? []) as { pk: string; sk: string }[];
    if (!keys.length) return deleted;
    for (let i = 0; i < keys.length; i += 25) {
      let requests = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
      for (let attempt = 0; requests.length; attempt++) {
        const res = await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: requests } }));
        requests = (res.UnprocessedItems?.[tableName()] ?? []) as typeof requests;
        if (requests.length) await new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** attempt)));
      }
    }
    deleted += keys.length;
  }
}

/** Runs `fn` over `chunks`, at most `parallel` at a time. */
async function eachChunk<T>(chunks: T[], parallel: number, fn: (chunk: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(parallel, chunks.length) }, async () => {
    while (next < chunks.length) await fn(chunks[next++]!);
  });
  await Promise.all(lanes);
}

const chunked = <T>(items: T[], size: number) => Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.min(1000, 20 * 2 ** attempt)));

type ItemKey = { pk: string; sk: string };
const keyId = (k: ItemKey) => `${k.pk}|${k.sk}`;

/** Reads items by key (BatchGetItem in chunks of 100, keys once each, unprocessed keys retried), by `pk|sk`. */
async function readByKey<T extends object>(keys: ItemKey[], options: { parallel?: number; projection?: string[] }): Promise<Map<string, T>> {
  const found = new Map<string, T>();
  const unique = [...new Map(keys.map((k) => [keyId(k), { pk: k.pk, sk: k.sk }])).values()];
  const projection = options.projection
    ? {
        ProjectionExpression: ['pk', 'sk', ...options.projection].map((_, i) => `#p${i}`).join(', '),
        ExpressionAttributeNames: Object.fromEntries(['pk', 'sk', ...options.projection].map((p, i) => [`#p${i}`, p])),
      }
    : {};
  await eachChunk(chunked(unique, 100), options.parallel ?? 4, async (chunk) => {
    let request: ItemKey[] = chunk;
    for (let attempt = 0; request.length; attempt++) {
      const out = await db().send(new BatchGetCommand({ RequestItems: { [tableName()]: { Keys: request, ConsistentRead: true, ...projection } } }));
      for (const item of (out.Responses?.[tableName()] ?? []) as (T & ItemKey)[]) found.set(keyId(item), item);
      request = (out.UnprocessedKeys?.[tableName()]?.Keys ?? []) as typeof request;
      if (request.length) await backoff(attempt);
    }
  });
  return found;
}

/**
 * Many items by key (BatchGetItem in chunks of 100, up to `parallel` chunks at once, unprocessed
 * keys retried, strongly consistent); missing keys are skipped; the answer keeps the order of `keys`.
 */
export async function getMany<T extends object>(keys: ItemKey[], options: { parallel?: number; projection?: string[] } = {}): Promise<T[]> {
  const found = await readByKey<T>(keys, options);
  return keys.map((k) => found.get(keyId(k))).filter((v): v is T => v !== undefined);
}

/**
 * Items of different kinds read together (one BatchGetItem for up to 100 keys, as `getMany`),
 * answered as a lookup: `item(key)` is the item at that key, undefined when there is none.
 */
export async function getKeyed(keys: ItemKey[], options: { parallel?: number; projection?: string[] } = {}): Promise<<T extends object>(key: ItemKey) => T | undefined> {
  const found = await readByKey<object>(keys, options);
  return <T extends object>(key: ItemKey) => found.get(keyId(key)) as T | undefined;
}

/**
 * Puts many items (BatchWriteItem in chunks of 25, up to `parallel` chunks at once, unprocessed
 * items retried with backoff). Unconditional: callers decide beforehand which items are new.
 */
export async function putMany(items: Item[], options: { parallel?: number } = {}): Promise<void> {
  await eachChunk(chunked(items, 25), options.parallel ?? 8, async (chunk) => {
    let requests = chunk.map((Item) => ({ PutRequest: { Item } }));
    for (let attempt = 0; requests.length; attempt++) {
      const res = await db().send(new BatchWriteCommand({ RequestItems: { [tableName()]: requests } }));
      requests = (res.UnprocessedItems?.[tableName()] ?? []) as typeof requests;
      if (requests.length) await backoff(attempt);
    }
  });
}

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/**
 * ADDs to numeric members of a map attribute (`stats.notes`…) of an existing item, optionally
 * SETting others, without touching `version`: counters kept beside an item never make its
 * optimistic PATCH start over.
 */
export function addToMap(
  key: { pk: string; sk: string },
  map: string,
  add: Record<string, number>,
  opts: { set?: Record<string, unknown>; condition?: string; values?: Item } = {},
): TransactItem {
  const names: Record<string, string> = { '#m': map };
  const values: Item = { ...opts.values };
  const adds = Object.entries(add).map(([field, n], i) => {
    names[`#a${i}`] = field;
    values[`:a${i}`] = n;
    return `#m.#a${i} :a${i}`;
  });
  const sets = Object.entries(opts.set ?? {}).map(([field, v], i) => {
    names[`#s${i}`] = field;
    values[`:s${i}`] = v;
    return `#m.#s${i} = :s${i}`;
  });
  const expr = [adds.length ? `ADD ${adds.join(', ')}` : '', sets.length ? `SET ${sets.join(', ')}` : ''].filter(Boolean).join(' ');
  return {
    Update: {
      TableName: tableName(),
      Key: key,
      UpdateExpression: expr,
      ConditionExpression: ['attribute_exists(pk)', opts.condition].filter(Boolean).join(' AND '),
      ExpressionAttributeNames: names,
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    },
  };
}

/** A Put that overwrites (lookup items whose key already says everything). */
export function putItem(item: Item): TransactItem {
  return { Put: { TableName: tableName(), Item: item } };
}

/** A Delete that does not care whether the item exists. */
export function deleteItem(key: { pk: string; sk: string }, condition?: { expression: string; values?: Item }): TransactItem {
  return {
    Delete: {
      TableName: tableName(),
      Key: { pk: key.pk, sk: key.sk },
      ...(condition ? { ConditionExpression: condition.expression, ...(condition.values ? { ExpressionAttributeValues: condition.values } : {}) } : {}),
    },
  };
}

/**
 * The lowest and highest sort-key suffix of UUID v7 ids created in [from, to] (an id starts with
 * its millisecond time in hex), so a time range of a collection keyed by id is one key range.
 */
export function idBounds(from?: string, to?: string): { low: string; high: string } {
  const stamp = (iso: string) => {
    const hex = Date.parse(iso).toString(16).padStart(12, '0');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-`;
  };
  // Ids start with a hex digit, so '0' is below every id ('' is not a valid key value); '~' sorts after every character of an id.
  return { low: from ? stamp(from) : '0', high: to ? `${stamp(to)}~` : '~' };
}

/** A filter that every `[field, value]` pair holds (`field = value` AND …); none for no pairs. */
export function equalityFilter(pairs: [string, unknown][]): RangeQuery['filter'] {
  if (!pairs.length) return undefined;
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  const parts = pairs.map(([field, value], i) => {
    names[`#q${i}`] = field;
    values[`:q${i}`] = value;
    return `#q${i} = :q${i}`;
  });
  return { expression: parts.join(' AND '), names, values };
}

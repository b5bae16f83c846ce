import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { tableName } from './client';

type Item = Record<string, unknown>;
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** What one UpdateItem does: SET fields, ADD to numbers (dotted paths reach into maps), REMOVE fields, under a condition. */
export interface UpdateSpec {
  set?: Item;
  add?: Record<string, number>;
  remove?: string[];
  /** Condition over `#name` / `:value` placeholders given in `names` / `values`; `attribute_exists(pk)` is always added. */
  condition?: string;
  names?: Record<string, string>;
  values?: Item;
}

/**
 * An update of an existing item built from field names (dotted paths for map members), for
 * writes that mix SET, ADD and REMOVE under one condition (state moves with their counters).
 */
export function updateWrite(key: { pk: string; sk: string }, spec: UpdateSpec): TransactItem {
  const names: Record<string, string> = { ...spec.names };
  const values: Item = { ...spec.values };
  let n = 0;
  const path = (field: string) =>
    field
      .split('.')
      .map((part) => {
        const ph = `#u${n++}`;
        names[ph] = part;
        return ph;
      })
      .join('.');
  const value = (v: unknown) => {
    const ph = `:u${n++}`;
    values[ph] = v;
    return ph;
  };
  const sets = Object.entries(spec.set ?? {}).map(([f, v]) => `${path(f)} = ${value(v)}`);
  const adds = Object.entries(spec.add ?? {}).filter(([, d]) => d !== 0).map(([f, d]) => `${path(f)} ${value(d)}`);
  const removes = (spec.remove ?? []).map(path);
  const expression = [sets.length ? `SET ${sets.join(', ')}` : '', adds.length ? `ADD ${adds.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : '']
    .filter(Boolean)
    .join(' ');
  return {
    Update: {
      TableName: tableName(),
      Key: { pk: key.pk, sk: key.sk },
      UpdateExpression: expression,
      ConditionExpression: ['attribute_exists(pk)', spec.condition].filter(Boolean).map((c) => `(${c})`).join(' AND '),
      ExpressionAttributeNames: names,
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    },
  };
}

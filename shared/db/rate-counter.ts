import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from './client';
import { keys } from './keys';

export interface CountRequest {
  keyId: string;
  window: number;
  limit: number;
  /** Epoch seconds after which DynamoDB may remove the counter (its `ttl`). */
  expiresAt: number;
  /** Aborts the call (the caller's latency bound). */
  signal?: AbortSignal;
}

/**
 * Counts one request in a key's window: one conditional UpdateItem (one write unit, refused or
 * not). Answers the window's count including this request, or null when the window already
 * holds `limit` requests (the counter is then left as it is).
 */
export async function countRequest(r: CountRequest): Promise<number | null> {
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.rateCounter(r.keyId, r.window),
        UpdateExpression: 'ADD #n :one SET #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(#n) OR #n < :limit',
        ExpressionAttributeNames: { '#n': 'n', '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':one': 1, ':limit': r.limit, ':ttl': r.expiresAt },
        ReturnValues: 'UPDATED_NEW',
      }),
      { abortSignal: r.signal },
    );
    return Number(out.Attributes?.n ?? 1);
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return null;
    throw err;
  }
}

export interface LeaseRequest {
  keyId: string;
  window: number;
  limit: number;
  /** Tokens asked for. */
  size: number;
  expiresAt: number;
  signal?: AbortSignal;
}

/**
 * Claims a slice of a key's window for one process (shared/domain/rate-limit/leases.ts): one
 * conditional UpdateItem adding `size` to the window's claimed count while that stays within
 * `limit`. When less than `size` is left, the refusal carries the count (ReturnValuesOnCondition-
 * CheckFailure) and a second conditional write claims exactly the rest; a claim that loses a race
 * three times answers 0 granted. The same item and key as `countRequest`, so the functions' IAM
 * grant (UpdateItem on `RATE#*` only) is unchanged.
 */
export async function claimLease(r: LeaseRequest): Promise<{ granted: number; claimed: number }> {
  let size = Math.min(r.size, r.limit);
  let expected: number | undefined;
  for (let attempt = 0; attempt < 3 && size > 0; attempt++) {
    try {
      const out = await db().send(
        new UpdateCommand({
          TableName: tableName(),
          Key: keys.rateCounter(r.keyId, r.window),
          UpdateExpression: 'ADD #n :size SET #ttl = :ttl',
          // First try: room for the slice. Then: exactly the count just read, so the rest is ours alone.
          ConditionExpression: expected === undefined ? 'attribute_not_exists(#n) OR #n <= :room' : (expected === 0 ? 'attribute_not_exists(#n) OR #n = :seen' : '#n = :seen'),
          ExpressionAttributeNames: { '#n': 'n', '#ttl': 'ttl' },
          ExpressionAttributeValues: { ':size': size, ':ttl': r.expiresAt, ...(expected === undefined ? { ':room': r.limit - size } : { ':seen': expected }) },
          ReturnValues: 'UPDATED_NEW',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        }),
        { abortSignal: r.signal },
      );
      return { granted: size, claimed: Number(out.Attributes?.n ?? size) };
    } catch (err) {
      if (!(err instanceof ConditionalCheckFailedException)) throw err;
      expected = Number((err.Item as { n?: { N?: string } } | undefined)?.n?.N ?? 0);
      size = r.limit - expected;
    }
  }
  return { granted: 0, claimed: expected ?? r.limit };
}

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

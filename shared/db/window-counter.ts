import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from './client';
import type { Key } from './keys';

/**
 * Counts one event in a fixed-window counter item (a key of shared/db/keys.ts): one conditional
 * UpdateItem, so every process shares the count. Answers the count including this event, or
 * null when the window already holds `limit` (the item is then left as it is).
 */
export async function countInWindow(key: Key, limit: number, expiresAt: number): Promise<number | null> {
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'ADD #n :one SET #ttl = :ttl',
        ConditionExpression: 'attribute_not_exists(#n) OR #n < :limit',
        ExpressionAttributeNames: { '#n': 'n', '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':one': 1, ':limit': limit, ':ttl': expiresAt },
        ReturnValues: 'UPDATED_NEW',
      }),
    );
    return Number(out.Attributes?.n ?? 1);
  } catch (err) {
    if (err instanceof ConditionalCheckFailedException) return null;
    throw err;
  }
}

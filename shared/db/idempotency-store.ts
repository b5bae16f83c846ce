import { DeleteCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from './client';
import { keys } from './keys';
import { getItem } from './store';

/** A stored answer (or a claim on one in progress) for an Idempotency-Key. */
export interface IdempotencyRecord {
  status: 'in_progress' | 'completed';
  body_hash: string;
  lease_until: number;
  response?: { statusCode: number; body: string; contentType?: string };
}

const RETAIN_SECONDS = 24 * 60 * 60;

/**
 * Claims a key for this request. Returns null when the claim landed (run the operation),
 * or the existing record when another request holds or completed it. An in-progress claim
 * whose lease ran out (its Lambda died) can be taken over.
 */
export async function claimIdempotencyKey(
  orgId: string,
  operationId: string,
  idemKey: string,
  bodyHash: string,
  leaseMs: number,
  now = Date.now(),
): Promise<IdempotencyRecord | null> {
  const key = keys.idempotency(orgId, operationId, idemKey);
  try {
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: { ...key, status: 'in_progress', body_hash: bodyHash, lease_until: now + leaseMs, ttl: Math.floor(now / 1000) + RETAIN_SECONDS },
        ConditionExpression: 'attribute_not_exists(pk) OR (#s = :prog AND lease_until < :now AND body_hash = :h)',
        ExpressionAttributeNames: { '#s': 'status' },
        ExpressionAttributeValues: { ':prog': 'in_progress', ':now': now, ':h': bodyHash },
      }),
    );
    return null;
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
    const existing = await getItem<IdempotencyRecord & Record<string, unknown>>(key);
    if (!existing) return claimIdempotencyKey(orgId, operationId, idemKey, bodyHash, leaseMs, now);
    return existing;
  }
}

/** Stores the answer so repeats replay it. */
export async function completeIdempotencyKey(orgId: string, operationId: string, idemKey: string, response: { statusCode: number; body: string; contentType?: string }): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.idempotency(orgId, operationId, idemKey),
      UpdateExpression: 'SET #s = :done, #r = :r',
      ExpressionAttributeNames: { '#s': 'status', '#r': 'response' },
      ExpressionAttributeValues: { ':done': 'completed', ':r': response },
    }),
  );
}

/** Releases a claim after a failed request, so the client may retry with the same key. */
export async function releaseIdempotencyKey(orgId: string, operationId: string, idemKey: string): Promise<void> {
  await db().send(
    new DeleteCommand({
      TableName: tableName(),
      Key: keys.idempotency(orgId, operationId, idemKey),
      ConditionExpression: '#s = :prog',
      ExpressionAttributeNames: { '#s': 'status' },
      ExpressionAttributeValues: { ':prog': 'in_progress' },
    }),
  ).catch((err) => {
    if (!(err instanceof ConditionalCheckFailedException)) throw err;
  });
}

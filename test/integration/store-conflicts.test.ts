import { TransactionCanceledException, TransactionConflictException } from '@aws-sdk/client-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../shared/db/client';
import { installFaultInjector } from '../../shared/fault-point';
import { keys } from '../../shared/db/keys';
import { ConditionFailed, getItem, putNew, transact, TransactionConflict, updateExisting } from '../../shared/db/store';
import { CONFLICT_ATTEMPTS } from '../../shared/db/retry';
import { logger } from '../../shared/logger';

logger.setLogLevel('SILENT');

/**
 * A transaction that overlaps another fails with TransactionCanceledException, reason
 * TransactionConflict: retryable and not a failed condition (references.md). DynamoDB Local seldom
 * raises it, so these tests inject it in front of the real client: the store sends the write again,
 * and after CONFLICT_ATTEMPTS answers TransactionConflict (503), never ConditionFailed.
 */
const conflict = (n: number) => new TransactionCanceledException({
  message: 'Transaction cancelled, please refer cancellation reasons for specific reasons [None, TransactionConflict]',
  $metadata: {},
  CancellationReasons: Array.from({ length: n }, (_, i) => ({ Code: i === n - 1 ? 'TransactionConflict' : 'None' })),
});

/** Makes the next `times` writes of the given command fail with `error` before they reach DynamoDB Local. */
function injectFailures(command: string, times: number, error: () => Error) {
  const client = db();
  const real = client.send.bind(client);
  let left = times;
  const calls: string[] = [];
  const spy = jest.spyOn(client, 'send').mockImplementation(((cmd: { constructor: { name: string } }, ...rest: unknown[]) => {
    calls.push(cmd.constructor.name);
    if (cmd.constructor.name === command && left > 0) {
      left--;
      return Promise.reject(error());
    }
    return (real as (...a: unknown[]) => Promise<unknown>)(cmd, ...rest);
  }) as never);
  return { calls, restore: () => spy.mockRestore() };
}

const counterKey = (org: string) => keys.counter(org, 'things');

describe('transaction conflicts in the store', () => {
  it('sends a conflicted transaction again: the write lands, no ConditionFailed', async () => {
    // Prepare
    const org = uuidv7();
    const key = { pk: `ORG#${org}`, sk: 'THING#1' };
    const injected = injectFailures('TransactWriteCommand', 2, () => conflict(2));

    // Act
    try {
      await transact([putNew({ ...key, n: 1 })], [{ orgId: org, collection: 'things', delta: 1 }]);
    } finally {
      injected.restore();
    }

    // Assess
    expect(injected.calls.filter((c) => c === 'TransactWriteCommand')).toHaveLength(3);
    expect(await getItem(key)).toMatchObject({ n: 1 });
    expect(await getItem(counterKey(org))).toMatchObject({ n: 1 });
  });

  it('answers TransactionConflict (503, retryable) when the conflict lasts, never ConditionFailed', async () => {
    const org = uuidv7();
    const key = { pk: `ORG#${org}`, sk: 'THING#1' };
    const injected = injectFailures('TransactWriteCommand', 1000, () => conflict(2));

    const err = await transact([putNew({ ...key, n: 1 })], [{ orgId: org, collection: 'things', delta: 1 }]).catch((e: unknown) => e);
    injected.restore();

    expect(err).toBeInstanceOf(TransactionConflict);
    expect(err).not.toBeInstanceOf(ConditionFailed);
    expect(err).toMatchObject({ statusCode: 503, retryAfterSeconds: 1, details: { reason: 'transaction_conflict' } });
    expect(injected.calls.filter((c) => c === 'TransactWriteCommand')).toHaveLength(CONFLICT_ATTEMPTS);
    expect(await getItem(key)).toBeUndefined();
  });

  // Lone writes are retried by the client itself (shared/db/client.ts), raw ones included: the
  // conflict is injected where the service answers, below the client's middleware.
  it('retries a lone write that met a transaction in flight (TransactionConflictException), raw writes too', async () => {
    const org = uuidv7();
    const key = { pk: `ORG#${org}`, sk: 'THING#1' };
    await transact([putNew({ ...key, n: 1 })]);
    const sent: string[] = [];
    let left = 2;
    installFaultInjector(async (_service, command, args, next) => {
      sent.push(command);
      if (command !== 'UpdateItemCommand' || left-- <= 0) return next(args);
      throw new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: {} });
    });
    try {
      await transact([updateExisting(key, { n: 2 })]);
      await db().send(new UpdateCommand({ TableName: tableName(), Key: key, UpdateExpression: 'SET m = :m', ExpressionAttributeValues: { ':m': 3 } }));
    } finally {
      installFaultInjector(undefined);
    }
    expect(sent.filter((c) => c === 'UpdateItemCommand')).toHaveLength(4);
    expect(await getItem(key)).toMatchObject({ n: 2, m: 3 });
  });

  it('answers a lone write\'s lasting conflict as TransactionConflict (503), never ConditionFailed', async () => {
    const key = { pk: `ORG#${uuidv7()}`, sk: 'THING#1' };
    installFaultInjector(async () => {
      throw new TransactionConflictException({ message: 'Transaction is ongoing for the item', $metadata: {} });
    });
    const err = await transact([putNew({ ...key, n: 1 })]).catch((e: unknown) => e).finally(() => installFaultInjector(undefined));
    expect(err).toBeInstanceOf(TransactionConflict);
    expect(await getItem(key)).toBeUndefined();
  });

  it('still answers ConditionFailed for a failed condition, with or without a conflict elsewhere in the same answer', async () => {
    const org = uuidv7();
    const key = { pk: `ORG#${org}`, sk: 'THING#1' };
    await transact([putNew({ ...key, n: 1 })]);

    const err = await transact([putNew({ ...key, n: 2 })], [{ orgId: org, collection: 'things', delta: 1 }]).catch((e: unknown) => e);

    expect(err).toBeInstanceOf(ConditionFailed);
    expect(await getItem(key)).toMatchObject({ n: 1 });
  });
});

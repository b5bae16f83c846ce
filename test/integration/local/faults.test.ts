/**
 * Faults on demand (LOCAL_FAULTS, shared/local/faults.ts): each injection point fails as the real
 * service can, against the real DynamoDB Local and S3 emulator, and the code above it copes as it
 * must against AWS (the store retries a conflict and never calls it a failed condition, the batch
 * reader reads unprocessed keys again, the SDK retries throttles and 5xx, the queue redelivers).
 */
import type { SQSEvent } from 'aws-lambda';
import { v7 as uuidv7 } from 'uuid';
import { getObject, putObject } from '../../../shared/adapters/kb-objects';
import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { S3Client } from '@aws-sdk/client-s3';
import { S3_MAX_ATTEMPTS } from '../../../shared/adapters/blob-store';
import { db, DYNAMODB_MAX_ATTEMPTS, tableName } from '../../../shared/db/client';
import { CONFLICT_ATTEMPTS } from '../../../shared/db/retry';
import { getMany } from '../../../shared/db/filtered-query';
import { getItem, putNew, transact, TransactionConflict } from '../../../shared/db/store';
import { ManualClock } from '../../../shared/local/clock';
import { DEFAULT_RATES, installLocalFaults, parseFaults, type FaultKind } from '../../../shared/local/faults';
import { QueueRunner } from '../../../shared/local/queue-runner';
import { rejection } from '../../support/rejection';

const install = (rates: Partial<Record<FaultKind, number>>, seed = 'test') => installLocalFaults({ seed, rates })!;
afterEach(() => installLocalFaults(undefined));

const item = (pk: string, n: number) => ({ pk, sk: `ITEM#${n}`, entity: 'FAULT_TEST', n });

describe('LOCAL_FAULTS', () => {
  it('reads off, on, rates and a seed, and names what is wrong', () => {
    expect(parseFaults(undefined)).toBeUndefined();
    expect(parseFaults(' off ')).toBeUndefined();
    expect(parseFaults('on')).toEqual({ seed: '1', rates: DEFAULT_RATES });
    expect(parseFaults('on,dynamo.conflict=0.5,seed=7')).toEqual({ seed: '7', rates: { ...DEFAULT_RATES, 'dynamo.conflict': 0.5 } });
    expect(() => parseFaults('dynamo.conflicts=0.1')).toThrow(/unknown fault "dynamo.conflicts"; the kinds are dynamo.conflict, /);
    expect(() => parseFaults('s3.5xx=2')).toThrow('LOCAL_FAULTS: the rate of s3.5xx must be a number from 0 to 1, got "2".');
    expect(parseFaults('dynamo.throttle=0.1,backoff=0.1')).toEqual({ seed: '1', rates: { 'dynamo.throttle': 0.1 }, backoff: 0.1 });
    expect(() => parseFaults('backoff=2')).toThrow('LOCAL_FAULTS: backoff (the scale of the SDK\'s retry waits) must be a number from 0 to 1, got "2".');
  });

  it('draws the same faults from the same seed', () => {
    const draws = (seed: string) => {
      const faults = install({ 'dynamo.conflict': 0.3 }, seed);
      return Array.from({ length: 40 }, () => faults.hit('dynamo.conflict'));
    };
    expect(draws('a')).toEqual(draws('a'));
    expect(draws('a')).not.toEqual(draws('b'));
  });
});

describe('DynamoDB under faults', () => {
  it('a transaction conflict is retried, and when it lasts is a 503 TransactionConflict with nothing written, never a failed condition', async () => {
    const pk = `FAULTS#${uuidv7()}`;
    const faults = install({ 'dynamo.conflict': 1 });
    const refused = await rejection(transact([putNew(item(pk, 1)), putNew(item(pk, 2))]));
    expect(refused).toBeInstanceOf(TransactionConflict);
    expect(refused).toMatchObject({ statusCode: 503 });
    expect(faults.injected()['dynamo.conflict']).toBe(CONFLICT_ATTEMPTS);
    installLocalFaults(undefined);
    expect(await getItem({ pk, sk: 'ITEM#1' })).toBeUndefined();

    // At a rate a retry gets through: written once.
    install({ 'dynamo.conflict': 0.3 }, 'through');
    await transact([putNew(item(pk, 3)), putNew(item(pk, 4))]);
    expect(await getMany([{ pk, sk: 'ITEM#3' }, { pk, sk: 'ITEM#4' }])).toHaveLength(2);
  });

  it('a lone write meeting a transaction in flight is retried too', async () => {
    const pk = `FAULTS#${uuidv7()}`;
    const faults = install({ 'dynamo.conflict': 1 });
    expect(await rejection(transact([putNew(item(pk, 1))]))).toBeInstanceOf(TransactionConflict);
    expect(faults.injected()['dynamo.conflict']).toBe(CONFLICT_ATTEMPTS);
    install({ 'dynamo.conflict': 0.3 }, 'through');
    await transact([putNew(item(pk, 2))]);
    installLocalFaults(undefined);
    expect(await getItem({ pk, sk: 'ITEM#1' })).toBeUndefined();
    expect(await getItem({ pk, sk: 'ITEM#2' })).toMatchObject({ n: 2 });
  });

  it('BatchGetItem answering unprocessed keys: the reader reads them again and returns every item', async () => {
    const pk = `FAULTS#${uuidv7()}`;
    for (let n = 0; n < 12; n++) await transact([putNew(item(pk, n))]);
    const faults = install({ 'dynamo.unprocessed': 0.7 });
    const keys = Array.from({ length: 12 }, (_, n) => ({ pk, sk: `ITEM#${n}` }));
    const found = await getMany<{ n: number }>(keys);
    expect(found.map((f) => f.n)).toEqual(Array.from({ length: 12 }, (_, n) => n));
    expect(faults.injected()['dynamo.unprocessed']).toBeGreaterThan(0);

    // One read as DynamoDB answers it: what is held back is not in the answer, and every key is in one of the two.
    install({ 'dynamo.unprocessed': 1 });
    const out = await db().send(new BatchGetCommand({ RequestItems: { [tableName()]: { Keys: keys.slice(0, 4) } } }));
    const answered = (out.Responses?.[tableName()] ?? []).map((i) => i.sk as string);
    const held = (out.UnprocessedKeys?.[tableName()]?.Keys ?? []).map((k) => k.sk as string);
    expect(answered.length).toBeGreaterThan(0);
    expect(held.length).toBeGreaterThan(0);
    expect([...answered, ...held].sort()).toEqual(keys.slice(0, 4).map((k) => k.sk).sort());
  });

  it('a throttle is retried by the SDK as against DynamoDB, and surfaces only when every attempt is throttled', async () => {
    const pk = `FAULTS#${uuidv7()}`;
    await transact([putNew(item(pk, 1))]);
    const faults = install({ 'dynamo.throttle': 1 });
    const refused = await rejection(getItem({ pk, sk: 'ITEM#1' }));
    expect(refused).toMatchObject({ name: 'ProvisionedThroughputExceededException' });
    expect(faults.injected()['dynamo.throttle']).toBeGreaterThanOrEqual(3); // every attempt of the SDK's retry strategy
    install({ 'dynamo.throttle': 0.3 }, 'through');
    expect(await getItem({ pk, sk: 'ITEM#1' })).toMatchObject({ n: 1 });
  });

  it('backoff=F scales the SDK\'s retry waits only: every attempt is still made, each wait within F times the SDK\'s curve', async () => {
    // The local clients' attempts are the SDK's own defaults.
    expect(await new DynamoDBClient({ region: 'us-east-1' }).config.maxAttempts()).toBe(DYNAMODB_MAX_ATTEMPTS);
    expect(await new S3Client({ region: 'us-east-1' }).config.maxAttempts()).toBe(S3_MAX_ATTEMPTS);
    const pk = `FAULTS#${uuidv7()}`;
    await transact([putNew(item(pk, 1))]);
    const faults = installLocalFaults({ seed: 'test', rates: { 'dynamo.throttle': 1 }, backoff: 0.01 })!;
    const refused = await rejection(getItem({ pk, sk: 'ITEM#1' }));
    expect(refused).toMatchObject({ name: 'ProvisionedThroughputExceededException', $metadata: expect.objectContaining({ attempts: DYNAMODB_MAX_ATTEMPTS }) });
    expect(faults.injected()['dynamo.throttle']).toBe(DYNAMODB_MAX_ATTEMPTS);
    // The SDK waits below 1 s × 2^retry for a throttle (1 + 2 + 4 s over three retries); scaled, below a hundredth of that.
    expect((refused as unknown as { $metadata: { totalRetryDelay: number } }).$metadata.totalRetryDelay).toBeLessThanOrEqual(70);
  });
});

describe('S3 under faults', () => {
  it('a 503 SlowDown is retried by the SDK, and surfaces only when every attempt fails', async () => {
    const key = `faults/${uuidv7()}.txt`;
    await putObject(key, 'hello', 'text/plain');
    const faults = install({ 's3.5xx': 1 });
    const refused = await rejection(getObject(key));
    expect(refused).toMatchObject({ name: 'SlowDown', $metadata: expect.objectContaining({ httpStatusCode: 503 }) });
    expect(faults.injected()['s3.5xx']).toBeGreaterThanOrEqual(3);
    install({ 's3.5xx': 0.3 }, 'through');
    expect((await getObject(key))?.body.toString()).toBe('hello');
  });

  it('backoff=F scales its retry waits too (SlowDown is a throttle to the SDK), every attempt still made', async () => {
    const key = `faults/${uuidv7()}.txt`;
    await putObject(key, 'hello', 'text/plain');
    installLocalFaults({ seed: 'test', rates: { 's3.5xx': 1 }, backoff: 0.01 });
    const refused = await rejection(getObject(key));
    expect(refused).toMatchObject({ name: 'SlowDown', $metadata: expect.objectContaining({ attempts: S3_MAX_ATTEMPTS }) });
    expect((refused as unknown as { $metadata: { totalRetryDelay: number } }).$metadata.totalRetryDelay).toBeLessThanOrEqual(30); // 1 + 2 s, scaled
  });
});

describe('the local queue under faults', () => {
  const job = { kind: 'queue' as const, name: 'work', entry: 'functions/jobs/work.ts', description: 'test', visibilityTimeoutSeconds: 30, maxReceiveCount: 5, batchSize: 10, access: {} };
  function runner() {
    const clock = new ManualClock();
    const received: string[] = [];
    const queue = new QueueRunner({
      jobs: [job],
      clock,
      loadHandler: async <H>() => (async (event: SQSEvent) => void received.push(...event.Records.map((r) => JSON.parse(r.body) as string))) as H,
    });
    return { clock, queue, received };
  }

  it('a send can fail (the sender sees the error, nothing is queued)', async () => {
    const { queue } = runner();
    install({ 'sqs.send': 1 });
    expect(await rejection(queue.send('work', 'a'))).toMatchObject({ name: 'InternalError', message: expect.stringContaining('SendMessage to "work" failed') });
    expect(queue.stats().work).toMatchObject({ sent: 0 });
  });

  it('a handled message can come again after its visibility timeout, and a recycled container\'s batch comes back whole', async () => {
    const { clock, queue, received } = runner();
    install({ 'sqs.redeliver': 1 });
    await queue.send('work', 'once');
    await queue.drain();
    expect(received).toEqual(['once']);
    installLocalFaults(undefined);
    clock.advance(30_000);
    await queue.drain();
    expect(received).toEqual(['once', 'once']);
    expect(queue.stats().work).toMatchObject({ redelivered: 1, deleted: 1, visible: 0, invisible: 0 });

    install({ 'lambda.recycle': 1 });
    await queue.send('work', 'recycled');
    await queue.drain();
    installLocalFaults(undefined);
    clock.advance(30_000);
    await queue.drain();
    expect(received).toEqual(['once', 'once', 'recycled', 'recycled']);
    expect(queue.stats().work).toMatchObject({ failed: 1, deleted: 2 });
  });
});

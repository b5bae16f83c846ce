import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { HeadBucketCommand, ListObjectsV2Command, PutObjectCommand } from '@aws-sdk/client-s3';
import { v7 as uuidv7 } from 'uuid';
import { AccessDeniedException, runAs } from '../../shared/access/enforce';
import { s3 } from '../../shared/adapters/blob-store';
import { installLocalQueue, queue } from '../../shared/adapters/queue';
import { resetSecrets, secrets } from '../../shared/adapters/secrets';
import { resetTelephony, telephony } from '../../shared/adapters/telephony';
import { resetConfig } from '../../shared/config';
import { db, tableName } from '../../shared/db/client';
import { generateApiKey, ensureOrganizationKey } from '../../shared/domain/api-keys/provision';
import { createKnowledgeBase } from '../../shared/domain/rag/service';
import { objectKeys } from '../../shared/domain/rag/object-keys';
import type { Access } from '../../shared/http/operation';
import { createHttpServer } from '../../shared/local/http-server';
import { handler as queryHandler } from '../../functions/rag/query';
import { apiEvent, lambdaContext, parsed } from '../support/events';
import { asFunction } from '../support/access';
import { rejection } from '../support/rejection';

const as = <T>(access: Access, work: () => Promise<T>) => runAs({ name: 'fixtureFunction', access }, work);
const bucket = () => process.env.BUCKET_NAME!;
const item = () => ({ pk: `ACCESS#${uuidv7()}`, sk: 'A' });

beforeAll(() => resetConfig());

describe('the local mirror of IAM: the table', () => {
  it('refuses a write from a function granted only reads, naming the function, the action and the table', async () => {
    const key = item();
    const err = await rejection(as({ table: 'R' }, () => db().send(new PutCommand({ TableName: tableName(), Item: key }))));
    expect(err).toBeInstanceOf(AccessDeniedException);
    expect(err).toMatchObject({ name: 'AccessDeniedException', functionName: 'fixtureFunction', action: 'dynamodb:PutItem', resource: `table/${tableName()}` });
    expect((err as Error).message).toMatch(/fixtureFunction.*dynamodb:PutItem.*table\//);
    // Nothing was written, and the read is allowed.
    expect((await as({ table: 'R' }, () => db().send(new GetCommand({ TableName: tableName(), Key: key })))).Item).toBeUndefined();
  });

  it('checks each item of a transaction: condition checks are reads, a Put is a write', async () => {
    const key = item();
    await db().send(new PutCommand({ TableName: tableName(), Item: key }));
    const check = { ConditionCheck: { TableName: tableName(), Key: key, ConditionExpression: 'attribute_exists(pk)' } };
    await as({ table: 'R' }, () => db().send(new TransactWriteCommand({ TransactItems: [check] })));
    const withPut = new TransactWriteCommand({ TransactItems: [check, { Put: { TableName: tableName(), Item: item() } }] });
    expect(await rejection(as({ table: 'R' }, () => db().send(withPut)))).toMatchObject({ action: 'dynamodb:PutItem' });
    await as({ table: 'RW' }, () => db().send(withPut));
  });

  it('refuses every table call from a function without a table grant, and another table even with one', async () => {
    const get = new GetCommand({ TableName: tableName(), Key: item() });
    expect(await rejection(as({}, () => db().send(get)))).toMatchObject({ action: 'dynamodb:GetItem' });
    const other = new GetCommand({ TableName: 'another-table', Key: item() });
    expect(await rejection(as({ table: 'RW' }, () => db().send(other)))).toMatchObject({ resource: 'table/another-table' });
  });

  it('lets the implicit rate-limit grant update RATE# counters and nothing else', async () => {
    const counters: Access = { table: 'R', rateLimitCounters: true };
    const bump = (pk: string) =>
      new UpdateCommand({ TableName: tableName(), Key: { pk, sk: 'W' }, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 } });
    await as(counters, () => db().send(bump(`RATE#${uuidv7()}`)));
    expect(await rejection(as(counters, () => db().send(bump(`ORG#${uuidv7()}`))))).toMatchObject({ action: 'dynamodb:UpdateItem' });
    expect(await rejection(as({ table: 'R' }, () => db().send(bump(`RATE#${uuidv7()}`))))).toBeInstanceOf(AccessDeniedException);
    const put = new PutCommand({ TableName: tableName(), Item: { pk: `RATE#${uuidv7()}`, sk: 'W' } });
    expect(await rejection(as(counters, () => db().send(put)))).toMatchObject({ action: 'dynamodb:PutItem' });
  });

  it('checks nothing outside a function (unit tests, the admin command)', async () => {
    await db().send(new PutCommand({ TableName: tableName(), Item: item() }));
  });
});

describe('the local mirror of IAM: the bucket', () => {
  const access: Access = { bucket: 'RW', bucketPrefixes: objectKeys.grantPatterns };
  const put = (Key: string) => new PutObjectCommand({ Bucket: bucket(), Key, Body: 'x' });

  it('allows object keys matching the declared patterns only', async () => {
    await as(access, async () => (await s3()).send(put(objectKeys.kbPrefix(uuidv7(), uuidv7()) + 'a.txt')));
    expect(await rejection(as(access, async () => (await s3()).send(put(`recordings/${uuidv7()}.wav`))))).toMatchObject({ action: 's3:PutObject' });
    expect(await rejection(as({ ...access, bucket: 'R' }, async () => (await s3()).send(put(objectKeys.upload(uuidv7(), 'u')))))).toMatchObject({ action: 's3:PutObject' });
  });

  it('lists only with bucketList and under the patterns; HeadBucket only with the head grant', async () => {
    const list = (Prefix: string) => new ListObjectsV2Command({ Bucket: bucket(), Prefix });
    const kb = objectKeys.kbPrefix(uuidv7(), uuidv7());
    expect(await rejection(as(access, async () => (await s3()).send(list(kb))))).toMatchObject({ action: 's3:ListBucket' });
    await as({ ...access, bucketList: true }, async () => (await s3()).send(list(kb)));
    expect(await rejection(as({ ...access, bucketList: true }, async () => (await s3()).send(list('orgs/'))))).toMatchObject({ action: 's3:ListBucket' });
    const head = new HeadBucketCommand({ Bucket: bucket() });
    expect(await rejection(as({ ...access, bucketList: true }, async () => (await s3()).send(head)))).toMatchObject({ action: 's3:ListBucket' });
    await as({ bucket: 'head' }, async () => (await s3()).send(head));
    expect(await rejection(as({ bucket: 'head' }, async () => (await s3()).send(put(objectKeys.upload(uuidv7(), 'u')))))).toBeInstanceOf(AccessDeniedException);
  });
});

describe('the local mirror of IAM: queues, the secrets key and the carrier', () => {
  const sent: string[] = [];
  beforeAll(() => installLocalQueue({ send: async (name) => void sent.push(name) }));
  afterAll(() => installLocalQueue(undefined));

  it('sends only to declared queues', async () => {
    await as({ queues: ['rag-ingest'] }, () => queue().send('rag-ingest', {}));
    expect(await rejection(as({ queues: ['rag-ingest'] }, () => queue().send('api-key-usage', {})))).toMatchObject({
      action: 'sqs:SendMessage',
      resource: 'queue api-key-usage',
    });
    expect(sent).toEqual(['rag-ingest']);
  });

  it('seals and opens secrets only with the secrets grant', async () => {
    resetSecrets();
    const sealed = await as({ secrets: true }, () => secrets().seal('pw'));
    expect(await rejection(as({ table: 'RW' }, () => secrets().seal('pw')))).toMatchObject({ action: 'kms:GenerateDataKey' });
    expect(await rejection(as({ table: 'RW' }, () => secrets().open(sealed)))).toMatchObject({ action: 'kms:Decrypt' });
  });

  it('talks to the carrier only with the telephony grant', async () => {
    resetTelephony();
    const search = () => telephony().searchAvailable({ country: 'US', limit: 1 });
    // The simulated carrier keeps what it sold in the table, so a carrier function reads it too.
    await as({ telephony: true, table: 'R' }, search);
    expect(await rejection(as({ table: 'RW' }, search))).toMatchObject({ name: 'AccessDeniedException', action: expect.stringMatching(/^carrier:searchAvailable/) });
  });
});

describe('the local runtime runs each handler inside its grants', () => {
  it('answers 500 when a read-only route writes the table, as in AWS', async () => {
    const logs: string[] = [];
    const route = { method: 'POST', path: '/api/v1/writes', operationId: 'writesWithReadGrant', entry: 'test/integration/fixtures/writes-with-read-grant.ts' };
    const server = createHttpServer({ routes: [{ ...route, access: { table: 'R' } }], log: (line) => logs.push(line) });
    const port = await server.listen();
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/writes`, { method: 'POST' });
      expect(res.status).toBe(500);
      expect(logs.join('\n')).toMatch(/AccessDeniedException.*writesWithReadGrant.*dynamodb:PutItem/s);
    } finally {
      await server.close();
    }
  });
});

describe('read-only POST operations', () => {
  it('answer a query with an Idempotency-Key within the read-only grant (the key is ignored: nothing changes)', async () => {
    // Prepare (outside any function: the admin command and createKnowledgeBase's own function)
    const key = generateApiKey();
    const { organizationId } = await ensureOrganizationKey({ key, name: 'access' });
    const kb = await createKnowledgeBase(organizationId, { name: 'kb', description: '' });
    const event = apiEvent({
      method: 'POST',
      path: '/api/v1/rag/query',
      headers: { 'x-api-key': key, 'content-type': 'application/json', 'idempotency-key': 'q-1' },
      body: { kb_id: kb.id, query: 'anything', top_k: 3 },
    });
    // Act
    const first = parsed(await asFunction('queryKnowledgeBase', () => queryHandler(event, lambdaContext)));
    const again = parsed(await asFunction('queryKnowledgeBase', () => queryHandler(event, lambdaContext)));
    // Assess
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
  });
});

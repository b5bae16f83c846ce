import { Readable } from 'node:stream';
import { DescribeTableCommand, DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { localS3Client } from '../../../shared/local/s3';
import { ensureTable, localDynamoClient } from '../../../shared/local/table';

// Started once for the run by test/support/global-setup.ts.
const { DYNAMODB_ENDPOINT, S3_ENDPOINT, TABLE_NAME, BUCKET_NAME } = process.env as Record<string, string>;

describe('the local table', () => {
  const dynamo = localDynamoClient(DYNAMODB_ENDPOINT);
  afterAll(() => dynamo.destroy());

  it('exists with pk/sk, both GSIs and TTL on `ttl`', async () => {
    // Act
    const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: TABLE_NAME }));
    const ttl = await dynamo.send(new DescribeTimeToLiveCommand({ TableName: TABLE_NAME }));
    // Assess
    expect(Table?.TableStatus).toBe('ACTIVE');
    expect(Table?.KeySchema).toEqual([
      { AttributeName: 'pk', KeyType: 'HASH' },
      { AttributeName: 'sk', KeyType: 'RANGE' },
    ]);
    const indexes = Object.fromEntries((Table?.GlobalSecondaryIndexes ?? []).map((i) => [i.IndexName, i.KeySchema]));
    expect(indexes).toEqual({
      gsi1: [
        { AttributeName: 'gsi1pk', KeyType: 'HASH' },
        { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
      ],
      gsi2: [
        { AttributeName: 'gsi2pk', KeyType: 'HASH' },
        { AttributeName: 'gsi2sk', KeyType: 'RANGE' },
      ],
    });
    expect(ttl.TimeToLiveDescription).toMatchObject({ TimeToLiveStatus: 'ENABLED', AttributeName: 'ttl' });
  });

  it('is left alone by a second ensureTable', async () => {
    // Act
    const again = await ensureTable(DYNAMODB_ENDPOINT, TABLE_NAME);
    // Assess
    expect(again).toEqual({ created: false, ttlEnabled: true });
  });
});

describe('the local bucket', () => {
  const s3 = localS3Client(S3_ENDPOINT);
  afterAll(() => s3.destroy());
  const key = (name: string) => `storage-test/${Date.now()}-${name}`;

  it('puts, heads, gets and deletes an object', async () => {
    // Prepare
    const Key = key('hello.txt');
    // Act
    await s3.send(new PutObjectCommand({ Bucket: BUCKET_NAME, Key, Body: 'hello', ContentType: 'text/plain' }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET_NAME, Key }));
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET_NAME, Key }));
    const text = await got.Body!.transformToString();
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET_NAME, Key }));
    const afterDelete = await s3.send(new HeadObjectCommand({ Bucket: BUCKET_NAME, Key })).catch((err: { $metadata?: { httpStatusCode?: number } }) => err.$metadata?.httpStatusCode);
    // Assess
    expect(head.ContentLength).toBe(5);
    expect(head.ContentType).toBe('text/plain');
    expect(text).toBe('hello');
    expect(afterDelete).toBe(404);
  });

  it('stores a streamed upload without its aws-chunked framing', async () => {
    // Prepare: a stream body makes the SDK send aws-chunked with a checksum trailer.
    const Key = key('stream.bin');
    const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    // Act
    await s3.send(new PutObjectCommand({ Bucket: BUCKET_NAME, Key, Body: Readable.from([bytes.subarray(0, 30_000), bytes.subarray(30_000)]), ContentLength: bytes.length }));
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET_NAME, Key }));
    // Assess
    expect(Buffer.from(await got.Body!.transformToByteArray())).toEqual(bytes);
    expect(got.ContentLength).toBe(bytes.length);
  });

  it('accepts a presigned PUT and serves the object through a presigned GET', async () => {
    // Prepare
    const Key = key('recording.wav');
    const audio = Buffer.from([0x52, 0x49, 0x46, 0x46, 0x00, 0xff, 0x10]);
    const putUrl = await getSignedUrl(s3, new PutObjectCommand({ Bucket: BUCKET_NAME, Key, ContentType: 'audio/wav' }), { expiresIn: 300 });
    // Act
    const put = await fetch(putUrl, { method: 'PUT', body: audio, headers: { 'content-type': 'audio/wav' } });
    const getUrl = await getSignedUrl(s3, new GetObjectCommand({ Bucket: BUCKET_NAME, Key }), { expiresIn: 300 });
    const get = await fetch(getUrl);
    // Assess
    expect(put.status).toBe(200);
    expect(get.status).toBe(200);
    expect(get.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await get.arrayBuffer())).toEqual(audio);
  });
});

import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { ApiGatewayManagementApiClient, DeleteConnectionCommand, PostToConnectionCommand } from '@aws-sdk/client-apigatewaymanagementapi';
import { DynamoDBClient, TransactWriteItemsCommand } from '@aws-sdk/client-dynamodb';
import { DecryptCommand, EncryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { DescribeSecretCommand, GetSecretValueCommand, PutSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetQueueAttributesCommand, GetQueueUrlCommand, SendMessageBatchCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { DynamoDBDocumentClient, GetCommand, PutCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { md5OfMessageAttributes } from '../../shared/local/stack/aws/sqs';
import { LocalSecretStore, startLocalAws, type AwsDenial, type LocalAws, type LocalPrincipal, type SqsMessageAttributes } from '../../shared/local/stack/aws-endpoint';
import type { ResolvedStatement } from '../../shared/local/stack/iam';

const REGION = 'us-east-1';
const ACCOUNT = '000000000000';
const TABLE = process.env.TABLE_NAME!;
const BUCKET = process.env.BUCKET_NAME!;
const TABLE_ARN = `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${TABLE}`;
const QUEUE = { name: 'vap-jobs', arn: `arn:aws:sqs:${REGION}:${ACCOUNT}:vap-jobs`, url: `http://127.0.0.1/${ACCOUNT}/vap-jobs` };
const KEY = { keyId: '11111111-2222-3333-4444-555555555555', arn: `arn:aws:kms:${REGION}:${ACCOUNT}:key/11111111-2222-3333-4444-555555555555`, aliases: ['alias/vap-data'] };
const OTHER_KEY = { keyId: 'other', arn: `arn:aws:kms:${REGION}:${ACCOUNT}:key/other` };
const SECRET_ARN = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:vap/twilio-AbC123`;
const run = randomUUID().slice(0, 8);

const allow = (Action: string[], Resource: string[], Condition?: ResolvedStatement['Condition']): ResolvedStatement => ({ Effect: 'Allow', Action, Resource, ...(Condition ? { Condition } : {}) });
const principals: Record<string, LocalPrincipal> = {
  AKIDFULL: {
    roleName: 'FullRole',
    sessionName: 'vap-full',
    statements: [
      allow(['dynamodb:*'], [TABLE_ARN, `${TABLE_ARN}/index/*`]),
      allow(['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], [`arn:aws:s3:::${BUCKET}/${run}/*`]),
      allow(['s3:ListBucket'], [`arn:aws:s3:::${BUCKET}`], { StringLike: { 's3:prefix': `${run}/*` } }),
      allow(['sqs:SendMessage', 'sqs:GetQueueUrl', 'sqs:GetQueueAttributes'], [QUEUE.arn]),
      allow(['kms:GenerateDataKey', 'kms:Decrypt', 'kms:Encrypt'], [KEY.arn, OTHER_KEY.arn]),
      allow(['secretsmanager:GetSecretValue', 'secretsmanager:PutSecretValue', 'secretsmanager:DescribeSecret'], [`arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:vap/*`]),
      allow(['execute-api:ManageConnections'], [`arn:aws:execute-api:${REGION}:${ACCOUNT}:api1/prod/*`]),
      allow(['cloudwatch:PutMetricData', 'xray:PutTraceSegments'], ['*']),
    ],
  },
  AKIDRATES: {
    roleName: 'RatesRole',
    sessionName: 'vap-rates',
    statements: [allow(['dynamodb:UpdateItem', 'dynamodb:Query'], [TABLE_ARN], { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RATE#*'] } })],
  },
  AKIDNONE: { roleName: 'NoneRole', statements: [] },
};

let aws: LocalAws;
const denied: AwsDenial[] = [];
const sent: Array<{ body: string; delay: number; attributes?: SqsMessageAttributes }> = [];
const posted: Array<{ id: string; data: string }> = [];
const secrets = new LocalSecretStore();

beforeAll(async () => {
  secrets.add({ name: 'vap/twilio', arn: SECRET_ARN, value: '{"authToken":"t0"}' });
  aws = await startLocalAws({
    region: REGION,
    accountId: ACCOUNT,
    principal: (key) => principals[key],
    dynamoEndpoint: process.env.DYNAMODB_ENDPOINT!,
    s3Endpoint: process.env.S3_ENDPOINT!,
    tables: [{ name: TABLE, arn: TABLE_ARN }],
    queues: [{ ...QUEUE, send: async (body, delay, attributes) => (sent.push({ body, delay, attributes }), { messageId: randomUUID(), md5: createHash('md5').update(body).digest('hex') }) }],
    secrets,
    kmsKeys: [KEY, OTHER_KEY],
    webSocketApis: [{
      apiId: 'api1',
      stage: 'prod',
      post: async (id, data) => (id === 'gone=' ? 'gone' : (posted.push({ id, data: data.toString('utf8') }), 'ok')),
      close: async (id) => (id === 'gone=' ? 'gone' : 'ok'),
    }],
    onDenied: (denial) => denied.push(denial),
  });
});
afterAll(() => aws?.close());

const config = (accessKeyId: string) => ({ endpoint: aws.endpoint, region: REGION, maxAttempts: 1, credentials: { accessKeyId, secretAccessKey: 'secret' } });
/** The error a call rejects with: its name, HTTP status and message. */
async function failure(promise: Promise<unknown>): Promise<{ name: string; status?: number; message: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as Error & { $metadata?: { httpStatusCode?: number } };
    return { name: e.name, status: e.$metadata?.httpStatusCode, message: e.message };
  }
  throw new Error('expected the call to fail');
}
const deniedMessage = (role: string, session: string, action: string, resource: string) =>
  `User: arn:aws:sts::${ACCOUNT}:assumed-role/${role}/${session} is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`;

/** Headers of a request signed (in form only: the endpoint checks no signature) by `key` for `service`. */
const signedBy = (key: string, service: string) => ({ authorization: `AWS4-HMAC-SHA256 Credential=${key}/20240101/${REGION}/${service}/aws4_request, SignedHeaders=host, Signature=abc123` });

describe('callers', () => {
  it('refuses an unsigned request and an unknown access key as AWS does', async () => {
    const unsigned = await fetch(aws.endpoint, { method: 'POST', headers: { 'x-amz-target': 'DynamoDB_20120810.ListTables', 'content-type': 'application/x-amz-json-1.0' }, body: '{}' });
    expect(unsigned.status).toBe(403);
    expect(((await unsigned.json()) as { __type: string }).__type).toMatch(/MissingAuthenticationTokenException$/);
    const anonymousS3 = await fetch(`${aws.endpoint}/${BUCKET}/x`);
    expect(anonymousS3.status).toBe(403);
    expect(await anonymousS3.text()).toContain('<Code>AccessDenied</Code>');

    const unknown = await failure(DynamoDBDocumentClient.from(new DynamoDBClient(config('AKIDWHO'))).send(new GetCommand({ TableName: TABLE, Key: { pk: 'a', sk: 'b' } })));
    expect(unknown).toMatchObject({ name: 'UnrecognizedClientException', status: 400 });
    const unknownS3 = await failure(new S3Client(config('AKIDWHO')).send(new GetObjectCommand({ Bucket: BUCKET, Key: 'x' })));
    expect(unknownS3).toMatchObject({ name: 'InvalidAccessKeyId', status: 403 });
  });

  it('answers an operation it does not serve with a 400 that names it', async () => {
    const answer = await fetch(aws.endpoint, { method: 'POST', headers: { ...signedBy('AKIDFULL', 'sns'), 'x-amz-target': 'AmazonSNS.Publish' }, body: '{}' });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toMatchObject({ __type: 'UnknownOperationException', message: expect.stringContaining('sns') });
  });
});

describe('clients configured by AWS_ENDPOINT_URL alone (as the runner configures functions)', () => {
  afterEach(() => delete process.env.AWS_ENDPOINT_URL);

  it('reach the endpoint; SQS goes to the QueueUrl host, so queue URLs must name this endpoint', async () => {
    process.env.AWS_ENDPOINT_URL = aws.endpoint;
    const credentials = { accessKeyId: 'AKIDFULL', secretAccessKey: 'secret' };
    const dynamo = DynamoDBDocumentClient.from(new DynamoDBClient({ region: REGION, credentials }));
    await dynamo.send(new GetCommand({ TableName: TABLE, Key: { pk: `RATE#${run}`, sk: 'none' } }));
    const warnings: string[] = [];
    const logger = { debug: () => undefined, info: () => undefined, error: () => undefined, warn: (line: string) => warnings.push(line) };
    const sqs = new SQSClient({ region: REGION, credentials, maxAttempts: 1, logger });
    const localUrl = aws.queueUrl('vap-jobs');
    expect((await sqs.send(new SendMessageCommand({ QueueUrl: localUrl, MessageBody: 'via env' }))).MessageId).toBeDefined();
    const elsewhere = await failure(sqs.send(new SendMessageCommand({ QueueUrl: `http://127.0.0.1:9/${ACCOUNT}/vap-jobs`, MessageBody: 'x' })));
    expect(elsewhere.message).toMatch(/ECONNREFUSED/);
    expect(warnings.join('\n')).toContain('using QueueUrl host as endpoint');
  });
});

describe('DynamoDB', () => {
  const full = () => DynamoDBDocumentClient.from(new DynamoDBClient(config('AKIDFULL')));
  const rates = () => DynamoDBDocumentClient.from(new DynamoDBClient(config('AKIDRATES')));

  it('forwards allowed calls to DynamoDB Local', async () => {
    await full().send(new PutCommand({ TableName: TABLE, Item: { pk: `RATE#${run}`, sk: 'A', n: 1 } }));
    const { Item } = await full().send(new GetCommand({ TableName: TABLE, Key: { pk: `RATE#${run}`, sk: 'A' } }));
    expect(Item).toEqual({ pk: `RATE#${run}`, sk: 'A', n: 1 });
  });

  it('enforces ForAllValues:StringLike dynamodb:LeadingKeys on UpdateItem and Query', async () => {
    await rates().send(new UpdateCommand({ TableName: TABLE, Key: { pk: `RATE#${run}`, sk: 'A' }, UpdateExpression: 'SET n = n + :one', ExpressionAttributeValues: { ':one': 1 } }));
    const query = await rates().send(new QueryCommand({ TableName: TABLE, KeyConditionExpression: '#pk = :pk', ExpressionAttributeNames: { '#pk': 'pk' }, ExpressionAttributeValues: { ':pk': `RATE#${run}` } }));
    expect(query.Items?.[0]?.n).toBe(2);

    const update = await failure(rates().send(new UpdateCommand({ TableName: TABLE, Key: { pk: `ORG#${run}`, sk: 'A' }, UpdateExpression: 'SET n = :one', ExpressionAttributeValues: { ':one': 1 } })));
    expect(update).toEqual({ name: 'AccessDeniedException', status: 400, message: deniedMessage('RatesRole', 'vap-rates', 'dynamodb:UpdateItem', TABLE_ARN) });
    const otherQuery = await failure(rates().send(new QueryCommand({ TableName: TABLE, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :s)', ExpressionAttributeValues: { ':pk': `ORG#${run}`, ':s': 'A' } })));
    expect(otherQuery.name).toBe('AccessDeniedException');
    const index = await failure(rates().send(new QueryCommand({ TableName: TABLE, IndexName: 'gsi1', KeyConditionExpression: 'gsi1pk = :pk', ExpressionAttributeValues: { ':pk': `RATE#${run}` } })));
    expect(index.message).toContain(`on resource: ${TABLE_ARN}/index/gsi1 `);
  });

  it('evaluates each TransactWriteItems item as its own action', async () => {
    const transaction = await failure(new DynamoDBClient(config('AKIDRATES')).send(new TransactWriteItemsCommand({
      TransactItems: [
        { Update: { TableName: TABLE, Key: { pk: { S: `RATE#${run}` }, sk: { S: 'A' } }, UpdateExpression: 'SET n = :n', ExpressionAttributeValues: { ':n': { N: '5' } } } },
        { Put: { TableName: TABLE, Item: { pk: { S: `RATE#${run}` }, sk: { S: 'B' } } } },
      ],
    })));
    expect(transaction.name).toBe('AccessDeniedException');
    expect(denied.at(-1)).toMatchObject({ roleName: 'RatesRole', action: 'dynamodb:PutItem', resource: TABLE_ARN, service: 'dynamodb' });
  });
});

describe('S3', () => {
  const s3 = (key = 'AKIDFULL') => new S3Client(config(key));

  it('serves path-style put, get, head and list on an IP endpoint (no forcePathStyle)', async () => {
    await s3().send(new PutObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt`, Body: 'hello', ContentType: 'text/plain' }));
    const got = await s3().send(new GetObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt` }));
    expect(await got.Body?.transformToString()).toBe('hello');
    expect((await s3().send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt` }))).ContentLength).toBe(5);
    const listed = await s3().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${run}/` }));
    expect(listed.Contents?.map((o) => o.Key)).toEqual([`${run}/a b.txt`]);
  });

  it('streams a stream upload through (aws-chunked with a checksum trailer)', async () => {
    await s3().send(new PutObjectCommand({ Bucket: BUCKET, Key: `${run}/stream.bin`, Body: Readable.from([Buffer.from('part one, '), Buffer.from('part two')]), ContentLength: 18 }));
    const got = await s3().send(new GetObjectCommand({ Bucket: BUCKET, Key: `${run}/stream.bin` }));
    expect(await got.Body?.transformToString()).toBe('part one, part two');
  });

  it('refuses what the role does not allow, in S3 XML with IAM message', async () => {
    const get = await failure(s3('AKIDNONE').send(new GetObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt` })));
    expect(get).toEqual({ name: 'AccessDenied', status: 403, message: deniedMessage('NoneRole', 'NoneRole', 's3:GetObject', `"arn:aws:s3:::${BUCKET}/${run}/a b.txt"`) });
    const list = await failure(s3().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'other/' })));
    expect(list).toMatchObject({ name: 'AccessDenied', status: 403 });
    const head = await failure(s3('AKIDNONE').send(new HeadObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt` })));
    expect(head.status).toBe(403);
    const deleteMany = await failure(s3().send(new DeleteObjectsCommand({ Bucket: BUCKET, Delete: { Objects: [{ Key: `${run}/a b.txt` }, { Key: 'elsewhere/x' }] } })));
    expect(deleteMany.name).toBe('AccessDenied');
    expect(denied.at(-1)).toMatchObject({ action: 's3:DeleteObject', resource: `arn:aws:s3:::${BUCKET}/elsewhere/x` });
  });

  it('serves a presigned GET and refuses one signed with an unknown key', async () => {
    const url = await getSignedUrl(s3(), new GetObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt` }), { expiresIn: 60 });
    const answer = await fetch(url);
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('hello');
    const expired = await fetch(await getSignedUrl(s3(), new GetObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt` }), { expiresIn: 1, signingDate: new Date(Date.now() - 60_000) }));
    expect(expired.status).toBe(403);
    expect(await expired.text()).toContain('<Message>Request has expired</Message>');
    const stranger = await fetch(await getSignedUrl(s3('AKIDWHO'), new GetObjectCommand({ Bucket: BUCKET, Key: `${run}/a b.txt` })));
    expect(stranger.status).toBe(403);
    expect(await stranger.text()).toContain('<Code>InvalidAccessKeyId</Code>');
  });
});

describe('SQS', () => {
  const sqs = (key = 'AKIDFULL') => new SQSClient(config(key));

  it('sends messages with an MD5 the SDK accepts, with attributes and in batches', async () => {
    const one = await sqs().send(new SendMessageCommand({ QueueUrl: QUEUE.url, MessageBody: '{"job":1}', DelaySeconds: 5, MessageAttributes: { traceparent: { DataType: 'String', StringValue: '00-abc-def-01' } } }));
    expect(one.MessageId).toBeDefined();
    expect(one.MD5OfMessageAttributes).toBe(md5OfMessageAttributes({ traceparent: { DataType: 'String', StringValue: '00-abc-def-01' } }));
    // AWS's own example (SQS Developer Guide, message attribute MD5).
    expect(md5OfMessageAttributes({ SellerName: { DataType: 'String', StringValue: 'Example Store' } })).toBe('cd28f3b68aeee4b2eac9c66f2f694b58');
    expect(sent.at(-1)).toMatchObject({ body: '{"job":1}', delay: 5, attributes: { traceparent: { StringValue: '00-abc-def-01' } } });
    const batch = await sqs().send(new SendMessageBatchCommand({ QueueUrl: QUEUE.url, Entries: [{ Id: 'a', MessageBody: 'x' }, { Id: 'b', MessageBody: 'y', DelaySeconds: 901 }] }));
    expect(batch.Successful?.map((s) => s.Id)).toEqual(['a']);
    expect(batch.Failed).toEqual([expect.objectContaining({ Id: 'b', Code: 'InvalidParameterValue', SenderFault: true })]);
  });

  it('finds queues by name and answers their attributes', async () => {
    expect((await sqs().send(new GetQueueUrlCommand({ QueueName: 'vap-jobs' }))).QueueUrl).toBe(QUEUE.url);
    const { Attributes } = await sqs().send(new GetQueueAttributesCommand({ QueueUrl: 'https://sqs.us-east-1.amazonaws.com/000000000000/vap-jobs', AttributeNames: ['QueueArn'] }));
    expect(Attributes).toEqual({ QueueArn: QUEUE.arn });
  });

  it('enforces SQS limits and names unknown queues and refusals as SQS does', async () => {
    const tooLong = await failure(sqs().send(new SendMessageCommand({ QueueUrl: QUEUE.url, MessageBody: 'x'.repeat(262_145) })));
    expect(tooLong).toMatchObject({ name: 'InvalidParameterValue', status: 400, message: expect.stringContaining('262144') });
    const delay = await failure(sqs().send(new SendMessageCommand({ QueueUrl: QUEUE.url, MessageBody: 'x', DelaySeconds: 901 })));
    expect(delay.name).toBe('InvalidParameterValue');
    const missing = await failure(sqs().send(new SendMessageCommand({ QueueUrl: `${QUEUE.url}-nope`, MessageBody: 'x' })));
    expect(missing).toMatchObject({ name: 'QueueDoesNotExist', status: 400 });
    const refused = await failure(sqs('AKIDNONE').send(new SendMessageCommand({ QueueUrl: QUEUE.url, MessageBody: 'x' })));
    expect(refused).toMatchObject({ status: 403, message: deniedMessage('NoneRole', 'NoneRole', 'sqs:sendmessage', QUEUE.arn) });
  });
});

describe('KMS', () => {
  const kms = (key = 'AKIDFULL') => new KMSClient(config(key));

  it('round-trips a data key by alias; Decrypt needs no KeyId', async () => {
    const dataKey = await kms().send(new GenerateDataKeyCommand({ KeyId: 'alias/vap-data', KeySpec: 'AES_256', EncryptionContext: { tenant: 'o1' } }));
    expect(dataKey.Plaintext).toHaveLength(32);
    expect(dataKey.KeyId).toBe(KEY.arn);
    const decrypted = await kms().send(new DecryptCommand({ CiphertextBlob: dataKey.CiphertextBlob, EncryptionContext: { tenant: 'o1' } }));
    expect(Buffer.from(decrypted.Plaintext!)).toEqual(Buffer.from(dataKey.Plaintext!));

    const changedContext = await failure(kms().send(new DecryptCommand({ CiphertextBlob: dataKey.CiphertextBlob, EncryptionContext: { tenant: 'o2' } })));
    expect(changedContext.name).toBe('InvalidCiphertextException');
    const tampered = Buffer.from(dataKey.CiphertextBlob!);
    tampered[tampered.length - 1]! ^= 1;
    expect((await failure(kms().send(new DecryptCommand({ CiphertextBlob: tampered, EncryptionContext: { tenant: 'o1' } })))).name).toBe('InvalidCiphertextException');
    const wrongKey = await failure(kms().send(new DecryptCommand({ CiphertextBlob: dataKey.CiphertextBlob, KeyId: OTHER_KEY.arn, EncryptionContext: { tenant: 'o1' } })));
    expect(wrongKey.name).toBe('IncorrectKeyException');
  });

  it('encrypts by key id, and names unknown keys and refusals', async () => {
    const { CiphertextBlob } = await kms().send(new EncryptCommand({ KeyId: KEY.keyId, Plaintext: Buffer.from('secret') }));
    expect(Buffer.from((await kms().send(new DecryptCommand({ CiphertextBlob }))).Plaintext!).toString()).toBe('secret');
    expect((await failure(kms().send(new EncryptCommand({ KeyId: 'alias/nope', Plaintext: Buffer.from('x') })))).name).toBe('NotFoundException');
    const refused = await failure(kms('AKIDNONE').send(new DecryptCommand({ CiphertextBlob })));
    expect(refused).toEqual({ name: 'AccessDeniedException', status: 400, message: deniedMessage('NoneRole', 'NoneRole', 'kms:Decrypt', KEY.arn) });
  });
});

describe('Secrets Manager', () => {
  const sm = (key = 'AKIDFULL') => new SecretsManagerClient(config(key));

  it('gets by name or partial ARN, puts and describes', async () => {
    expect((await sm().send(new GetSecretValueCommand({ SecretId: 'vap/twilio' }))).SecretString).toBe('{"authToken":"t0"}');
    await sm().send(new PutSecretValueCommand({ SecretId: SECRET_ARN.replace(/-AbC123$/, ''), SecretString: '{"authToken":"t1"}' }));
    const got = await sm().send(new GetSecretValueCommand({ SecretId: SECRET_ARN }));
    expect(got).toMatchObject({ ARN: SECRET_ARN, Name: 'vap/twilio', SecretString: '{"authToken":"t1"}', VersionStages: ['AWSCURRENT'] });
    expect(got.CreatedDate).toBeInstanceOf(Date);
    expect((await sm().send(new DescribeSecretCommand({ SecretId: 'vap/twilio' }))).ARN).toBe(SECRET_ARN);
  });

  it('names unknown secrets and refusals', async () => {
    expect(await failure(sm().send(new GetSecretValueCommand({ SecretId: 'vap/nope' })))).toMatchObject({ name: 'ResourceNotFoundException', status: 400 });
    const refused = await failure(sm('AKIDNONE').send(new GetSecretValueCommand({ SecretId: 'vap/twilio' })));
    expect(refused).toEqual({ name: 'AccessDeniedException', status: 400, message: deniedMessage('NoneRole', 'NoneRole', 'secretsmanager:GetSecretValue', SECRET_ARN) });
  });
});

describe('API Gateway Management API', () => {
  const management = (key = 'AKIDFULL') => new ApiGatewayManagementApiClient({ ...config(key), endpoint: `${aws.endpoint}/_ws/api1/prod` });

  it('posts to and deletes connections through a path-prefixed endpoint', async () => {
    await management().send(new PostToConnectionCommand({ ConnectionId: 'c1=', Data: Buffer.from('{"type":"text"}') }));
    expect(posted.at(-1)).toEqual({ id: 'c1=', data: '{"type":"text"}' });
    await management().send(new DeleteConnectionCommand({ ConnectionId: 'c1=' }));
  });

  it('answers GoneException, PayloadTooLargeException and AccessDenied', async () => {
    expect(await failure(management().send(new PostToConnectionCommand({ ConnectionId: 'gone=', Data: Buffer.from('x') })))).toMatchObject({ name: 'GoneException', status: 410 });
    expect(await failure(management().send(new PostToConnectionCommand({ ConnectionId: 'c1=', Data: Buffer.alloc(128 * 1024 + 1) })))).toMatchObject({ name: 'PayloadTooLargeException', status: 413 });
    const refused = await failure(management('AKIDNONE').send(new PostToConnectionCommand({ ConnectionId: 'c1=', Data: Buffer.from('x') })));
    expect(refused.status).toBe(403);
    expect(denied.at(-1)).toMatchObject({ action: 'execute-api:ManageConnections', resource: `arn:aws:execute-api:${REGION}:${ACCOUNT}:api1/prod/POST/@connections/c1=` });
  });
});

describe('CloudWatch, X-Ray and Logs', () => {
  const putMetricData = (key: string) =>
    fetch(aws.endpoint, {
      method: 'POST',
      headers: { ...signedBy(key, 'monitoring'), 'x-amz-target': 'GraniteServiceVersion20100801.PutMetricData', 'content-type': 'application/x-amz-json-1.0' },
      body: JSON.stringify({ Namespace: 'vap', MetricData: [{ MetricName: 'Calls', Value: 1 }] }),
    });

  it('records PutMetricData only when cloudwatch:PutMetricData is allowed', async () => {
    expect((await putMetricData('AKIDFULL')).status).toBe(200);
    expect(aws.metrics.at(-1)).toEqual({ roleName: 'FullRole', namespace: 'vap', data: [{ MetricName: 'Calls', Value: 1 }] });
    const refused = await putMetricData('AKIDNONE');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('x-amzn-query-error')).toBe('AccessDenied;Sender');
    expect(aws.metrics).toHaveLength(1);
  });

  it('accepts X-Ray segments and refuses Logs calls the role does not allow', async () => {
    const xray = await fetch(`${aws.endpoint}/TraceSegments`, { method: 'POST', headers: signedBy('AKIDFULL', 'xray'), body: '{"TraceSegmentDocuments":[]}' });
    expect(await xray.json()).toEqual({ UnprocessedTraceSegments: [] });
    const logs = await fetch(aws.endpoint, { method: 'POST', headers: { ...signedBy('AKIDFULL', 'logs'), 'x-amz-target': 'Logs_20140328.PutLogEvents' }, body: '{"logGroupName":"g","logStreamName":"s","logEvents":[]}' });
    expect(logs.status).toBe(400);
    expect(denied.at(-1)).toMatchObject({ action: 'logs:PutLogEvents', resource: `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:g:log-stream:s` });
  });
});

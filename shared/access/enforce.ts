import { AsyncLocalStorage } from 'node:async_hooks';
import { RATE_COUNTER_KEY_PREFIX, type Access } from './declaration';

/**
 * The local mirror of IAM. Deployed, each function's role holds exactly the grants its
 * `access` declaration asks for (lib/api-function.ts), and a call outside them fails with
 * AccessDenied. Locally every process holds every credential, so the local runtime (and the
 * integration tests) run each handler invocation inside `runAs(fn, …)`, and the SDK clients,
 * the queue port, the secrets box and the carrier check each call against the current
 * function's access here, with the same action names and resources IAM would evaluate.
 * Outside any `runAs` (unit tests, the admin command, start-up) nothing is checked.
 */

/** Whose grants apply: a function's name (operation id or job name) and its declared access. */
export interface FunctionGrant {
  name: string;
  access: Access;
}

const current = new AsyncLocalStorage<FunctionGrant>();

/** Runs `work` as the function `grant`: every call it makes is checked against that access. */
export function runAs<T>(grant: FunctionGrant, work: () => T): T {
  return current.run(grant, work);
}

/** The function whose grants apply now, if any. */
export function currentGrant(): FunctionGrant | undefined {
  return current.getStore();
}

/** The error AWS answers a call outside a role's grants with (a 500 to the API's caller). */
export class AccessDeniedException extends Error {
  override readonly name = 'AccessDeniedException';
  readonly $fault = 'client';
  readonly $metadata = { httpStatusCode: 400 };
  constructor(readonly functionName: string, readonly action: string, readonly resource: string) {
    super(`User: function ${functionName} is not authorized to perform: ${action} on resource: ${resource} because no identity-based policy allows the ${action} action`);
  }
}

function deny(grant: FunctionGrant, action: string, resource: string): never {
  throw new AccessDeniedException(grant.name, action, resource);
}

/** IAM's StringLike / resource matching: `*` any run of characters (slashes too), `?` one. */
export function iamLike(pattern: string, value: string): boolean {
  const source = pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${source}$`, 's').test(value);
}

// ---------------------------------------------------------------------------------------------
// DynamoDB

const TABLE_READ = new Set(['dynamodb:GetItem', 'dynamodb:BatchGetItem', 'dynamodb:Query', 'dynamodb:ConditionCheckItem']);
const TABLE_WRITE = new Set(['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem']);

/** The DynamoDB actions an `access.table` mode grants (the CDK grant uses the same lists). */
export function tableActions(mode: 'R' | 'RW'): string[] {
  return mode === 'RW' ? [...TABLE_READ, ...TABLE_WRITE] : [...TABLE_READ];
}

type Attr = string | { S?: string } | undefined;
const text = (value: Attr): string | undefined => (typeof value === 'string' ? value : value?.S);

/** Whether the role may perform `action` on one item (`pk` given) or on the table (`pk` absent). */
function tableAllows(access: Access, action: string, pk?: string): boolean {
  if (access.table === 'RW' && TABLE_WRITE.has(action)) return true;
  if (access.table && TABLE_READ.has(action)) return true;
  // The implicit rate-limit grant: UpdateItem where dynamodb:LeadingKeys is like RATE#*.
  return !!access.rateLimitCounters && action === 'dynamodb:UpdateItem' && !!pk?.startsWith(RATE_COUNTER_KEY_PREFIX);
}

interface DynamoCall {
  action: string;
  table?: string;
  index?: string;
  pk?: string;
}

/** The IAM actions one DynamoDB command needs (a transaction: one per item, as IAM evaluates it). */
function dynamoCalls(commandName: string, input: Record<string, any>): DynamoCall[] {
  const op = commandName.replace(/Command$/, '');
  const pkOf = (key: Record<string, Attr> | undefined) => text(key?.pk);
  switch (op) {
    case 'TransactWriteItems':
      return (input.TransactItems ?? []).map((item: Record<string, any>) => {
        const [kind, body] = Object.entries(item)[0] as [string, Record<string, any>];
        const action = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem' }[kind] ?? kind;
        return { action: `dynamodb:${action}`, table: body.TableName, pk: pkOf(body.Key ?? body.Item) };
      });
    case 'TransactGetItems':
      return (input.TransactItems ?? []).map((item: { Get: Record<string, any> }) => ({ action: 'dynamodb:GetItem', table: item.Get.TableName }));
    case 'BatchGetItem':
    case 'BatchWriteItem':
      return Object.keys(input.RequestItems ?? {}).map((table) => ({ action: `dynamodb:${op}`, table }));
    default:
      return [{ action: `dynamodb:${op}`, table: input.TableName, index: input.IndexName, pk: pkOf(input.Key ?? input.Item) }];
  }
}

/** Checks one DynamoDB command against the current function's grants. */
export function checkDynamo(commandName: string, input: Record<string, any>, tableName: string): void {
  const grant = currentGrant();
  if (!grant) return;
  for (const call of dynamoCalls(commandName, input)) {
    const resource = `table/${call.table}${call.index ? `/index/${call.index}` : ''}`;
    if (call.table !== tableName || !tableAllows(grant.access, call.action, call.pk)) deny(grant, call.action, resource);
  }
}

// ---------------------------------------------------------------------------------------------
// S3

/** Object actions of the bucket grant, by mode (the CDK grant uses the same lists). */
export function objectActions(mode: 'R' | 'RW'): string[] {
  return mode === 'RW' ? ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'] : ['s3:GetObject'];
}

const OBJECT_ACTION: Record<string, string> = {
  GetObject: 's3:GetObject',
  HeadObject: 's3:GetObject',
  PutObject: 's3:PutObject',
  CreateMultipartUpload: 's3:PutObject',
  UploadPart: 's3:PutObject',
  CompleteMultipartUpload: 's3:PutObject',
  DeleteObject: 's3:DeleteObject',
};

function objectAllowed(access: Access, action: string, key: string): boolean {
  if (access.bucket !== 'R' && access.bucket !== 'RW') return false;
  if (!objectActions(access.bucket).includes(action)) return false;
  const patterns = access.bucketPrefixes?.length ? access.bucketPrefixes : ['*'];
  return patterns.some((pattern) => iamLike(pattern, key));
}

/**
 * s3:ListBucket. HeadBucket carries no prefix, so a grant narrowed by an `s3:prefix` condition
 * does not allow it (a missing condition key never matches StringLike).
 */
function listAllowed(access: Access, prefix: string | undefined): boolean {
  if (access.bucket === 'head') return prefix === undefined;
  if (!access.bucket || !access.bucketList) return false;
  if (!access.bucketPrefixes?.length) return true;
  return prefix !== undefined && access.bucketPrefixes.some((pattern) => iamLike(pattern, prefix));
}

/** Checks one S3 command against the current function's grants. */
export function checkS3(commandName: string, input: Record<string, any>, bucketName: string): void {
  const grant = currentGrant();
  if (!grant) return;
  const op = commandName.replace(/Command$/, '');
  const bucket = String(input.Bucket ?? '');
  const { access } = grant;
  const object = (action: string, key: string) => {
    if (bucket !== bucketName || !objectAllowed(access, action, key)) deny(grant, action, `${bucket}/${key}`);
  };
  if (op === 'HeadBucket' || op === 'ListObjectsV2' || op === 'ListObjects') {
    const prefix = op === 'HeadBucket' ? undefined : String(input.Prefix ?? '');
    if (bucket !== bucketName || !listAllowed(access, prefix)) deny(grant, 's3:ListBucket', prefix === undefined ? bucket : `${bucket} (s3:prefix "${prefix}")`);
    return;
  }
  if (op === 'DeleteObjects') {
    for (const { Key } of input.Delete?.Objects ?? []) object('s3:DeleteObject', String(Key));
    return;
  }
  if (op === 'CopyObject') {
    const [sourceBucket, ...rest] = decodeURIComponent(String(input.CopySource ?? '')).replace(/^\//, '').split('/');
    if (sourceBucket !== bucketName) deny(grant, 's3:GetObject', String(input.CopySource));
    object('s3:GetObject', rest.join('/'));
    object('s3:PutObject', String(input.Key));
    return;
  }
  const action = OBJECT_ACTION[op];
  if (!action) deny(grant, `s3:${op}`, bucket);
  object(action, String(input.Key ?? ''));
}

// ---------------------------------------------------------------------------------------------
// Queues, the secrets key, the carrier

/** sqs:SendMessage on a job's queue: only the queues the function declares. */
export function checkQueueSend(queueName: string): void {
  const grant = currentGrant();
  if (grant && !grant.access.queues?.includes(queueName)) deny(grant, 'sqs:SendMessage', `queue ${queueName}`);
}

/** kms:GenerateDataKey (sealing) or kms:Decrypt (opening) with the secrets key. */
export function checkSecretsKey(action: 'kms:GenerateDataKey' | 'kms:Decrypt'): void {
  const grant = currentGrant();
  if (grant && !grant.access.secrets) deny(grant, action, 'key/secrets');
}

/** Any call to the carrier: deployed, only `telephony` functions get its settings and credentials secret. */
export function checkTelephony(method: string): void {
  const grant = currentGrant();
  if (grant && !grant.access.telephony) deny(grant, `carrier:${method} (secretsmanager:GetSecretValue)`, 'secret/telephony-credentials');
}

/** Post-call analysis: deployed, only `analysis` functions get its settings and API-key secret. */
export function checkAnalysis(): void {
  const grant = currentGrant();
  if (grant && !grant.access.analysis) deny(grant, 'analysis:analyze (secretsmanager:GetSecretValue)', 'secret/analysis-credentials');
}

/** Running the conversation model: deployed, only `llm` functions get its settings and may read its API-key secret. */
export function checkLlm(): void {
  const grant = currentGrant();
  if (grant && !grant.access.llm) deny(grant, 'llm:complete (secretsmanager:GetSecretValue)', 'secret/llm-credentials');
}

/** Signing or verifying a short-lived token: deployed, only `tokens` functions may read the token-signing secret. */
export function checkTokens(): void {
  const grant = currentGrant();
  if (grant && !grant.access.tokens) deny(grant, 'secretsmanager:GetSecretValue', 'secret/token-signing');
}

// ---------------------------------------------------------------------------------------------
// SDK clients

interface MiddlewareHost {
  middlewareStack: { add(middleware: unknown, options: { step: 'initialize'; name: string; override?: boolean }): void };
}

/**
 * Adds the check to an SDK client: `check(commandName, input)` runs before each command is
 * serialized (presigning included, as a presigned URL is only as good as its signer's grants).
 */
export function guardClient(client: MiddlewareHost, name: string, check: (commandName: string, input: Record<string, any>) => void): void {
  client.middlewareStack.add(
    (next: (args: { input: Record<string, any> }) => Promise<unknown>, context: { commandName?: string }) =>
      async (args: { input: Record<string, any> }) => {
        check(context.commandName ?? '', args.input);
        return next(args);
      },
    { step: 'initialize', name, override: true },
  );
}

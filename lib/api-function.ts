import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import type { ModelProviderTarget } from './model-provider';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { objectActions, tableActions } from '../shared/access/enforce';
import { RATE_COUNTER_KEY_PREFIX, type Access } from '../shared/http/operation';
import { DEFAULT_TIMEOUT_SECONDS, queueUrlVariable } from '../shared/jobs/definition';
import { acknowledgeGrantedResourceWildcard } from './acknowledge';

/** Read, or read and write. */
export type AccessMode = 'R' | 'RW';

/** The resources an `Access` declaration can name, for `ApiFunction.applyAccess`. */
export interface AccessTargets {
  table: dynamodb.ITable;
  bucket: s3.IBucket;
  secretsKey: kms.IKey;
  /** Queues by job name (shared/jobs/registry.ts). */
  queues: ReadonlyMap<string, sqs.IQueue>;
  /** The carrier: TELEPHONY_PROVIDER and the provider's credentials secret. */
  telephony?: { provider: string; secret: secretsmanager.ISecret };
  /** Post-call analysis: its settings and, for the `openai` analyzer, the API key's secret. */
  analysis?: ModelProviderTarget;
  /** The conversation model: its settings and, for the `openai` model, the API key's secret. */
  llm?: ModelProviderTarget;
  /** The token-signing secret (shared/adapters/signed-token.ts). */
  tokens?: secretsmanager.ISecret;
}

export interface ApiFunctionProps {
  code: lambda.Code;
  description: string;
  /** Settings every function reads (shared/config.ts); merged over the runtime defaults below. */
  environment: Record<string, string>;
  /** Default 256 MB. */
  memoryMb?: number;
  /** Default 10 s. */
  timeoutSeconds?: number;
  /** Default one month. */
  logRetention?: logs.RetentionDays;
  /** The bundle's export Lambda calls (default `handler`; `streamHandler` behind the streaming API). */
  handlerExport?: string;
  /** Reserved concurrency: the most instances at once, held back from the account's pool; default none. */
  reservedConcurrency?: number;
}

/** The runtime every function uses; pinned so an upgrade is a reviewed change (see the L1 acknowledgment). */
export const FUNCTION_RUNTIME = lambda.Runtime.NODEJS_22_X;

/** Service name in every structured log line and trace. */
export const SERVICE_NAME = 'voice-agent-platform';

/**
 * A Lambda function with every default of this project in one place: Node.js 22 on arm64, its
 * own log group with a retention, active tracing, the shared environment, and a
 * role that starts with nothing but writing to that log group. Everything else it may touch is
 * added with the `bind…` grants below, which is how least privilege follows `Access`.
 */
export class ApiFunction extends lambda.Function {
  /** The execution role (the base class types it as optional; here it always exists). */
  private readonly executionRole: iam.Role;

  constructor(scope: Construct, id: string, props: ApiFunctionProps) {
    // The log group and role are created beside the function (the pattern of the Powertools
    // examples) because they must exist before the base constructor runs.
    const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      // Logs may be needed after a teardown (an incident review); they expire by retention anyway.
      removalPolicy: RemovalPolicy.RETAIN,
    });
    // Our own role instead of the managed AWSLambdaBasicExecutionRole, which would allow
    // creating and writing any log group in the account: this one writes to its own group only.
    const role = new iam.Role(scope, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Runs ${id}: ${props.description}`.slice(0, 1000),
    });
    super(scope, id, {
      code: props.code,
      handler: `index.${props.handlerExport ?? 'handler'}`,
      runtime: FUNCTION_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memoryMb ?? 256,
      timeout: Duration.seconds(props.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS),
      reservedConcurrentExecutions: props.reservedConcurrency,
      description: props.description.slice(0, 256),
      role,
      logGroup,
      tracing: lambda.Tracing.ACTIVE,
      environment: {
        RUNTIME: 'aws',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        POWERTOOLS_SERVICE_NAME: SERVICE_NAME,
        ...props.environment,
      },
    });
    this.executionRole = role;
    logGroup.grantWrite(role);

    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active tracing adds xray:PutTraceSegments and xray:PutTelemetryRecords, which support no ' +
        'resource-level permissions; the infra test checks that "*" carries only these X-Ray actions.',
    });
    Validations.of(this).acknowledge({
      id: 'AwsSolutions-L1',
      reason:
        'The runtime is pinned to nodejs22.x by design (the bundles target node22 and the local ' +
        'runtime is tested against it); moving to a newer runtime is a deliberate, reviewed change.',
    });
  }

  /**
   * Grants reading (`R`) or reading and writing (`RW`) the table's items and indexes: the item
   * actions the store uses (shared/access/enforce.ts lists them and the local runtime enforces
   * the same lists), never Scan, and no DescribeTable (no function asks for the table's shape).
   */
  bindTable({ table, accessMode }: { table: dynamodb.ITable; accessMode: AccessMode }): void {
    table.grant(this, ...tableActions(accessMode));
    acknowledgeGrantedResourceWildcard(
      this.executionRole,
      table.tableArn,
      '/index/*',
      "The CDK table grant covers this table's global secondary indexes (<table arn>/index/*), which every query by gsi1/gsi2 needs; no other table.",
    );
  }

  /**
   * Grants reading (`R`: s3:GetObject) or reading, writing and deleting (`RW`: also s3:PutObject
   * and s3:DeleteObject) the bucket's objects, all of them or only those matching `prefixes`
   * (IAM object key patterns, one `*` per unknown part). Listing is separate (`bindBucketList`):
   * CDK's grantRead would add an unconditioned s3:List* to every reader.
   */
  bindBucket({ bucket, accessMode, prefixes }: { bucket: s3.IBucket; accessMode: AccessMode; prefixes?: string[] }): void {
    const patterns = prefixes?.length ? prefixes : ['*'];
    iam.Grant.addToPrincipal({ grantee: this, actions: objectActions(accessMode), resourceArns: patterns.map((p) => bucket.arnForObjects(p)) });
    const reason =
      'Object keys are per organization and not known in advance, so the object grant names key patterns ' +
      '(<bucket arn>/<pattern>) of this one bucket, the ones the function declares.';
    for (const pattern of patterns) acknowledgeGrantedResourceWildcard(this.executionRole, bucket.bucketArn, `/${pattern}`, reason);
  }

  /**
   * Grants listing object keys (s3:ListBucket), narrowed to `prefixes` by an `s3:prefix`
   * condition when given (a HeadBucket, which has no prefix, is then refused).
   */
  bindBucketList({ bucket, prefixes }: { bucket: s3.IBucket; prefixes?: string[] }): void {
    iam.Grant.addToPrincipal({
      grantee: this,
      actions: ['s3:ListBucket'],
      resourceArns: [bucket.bucketArn],
      conditions: prefixes?.length ? { StringLike: { 's3:prefix': prefixes } } : undefined,
    });
  }

  /**
   * Grants generating data keys and decrypting them with the secrets key (envelope encryption:
   * kms:GenerateDataKey to seal, kms:Decrypt to open), and tells the function its id (SECRETS_KEY_ID).
   * Not grantEncryptDecrypt: nothing calls Encrypt or ReEncrypt*.
   */
  bindSecretsKey(key: kms.IKey): void {
    key.grant(this, 'kms:GenerateDataKey', 'kms:Decrypt');
    this.addEnvironment('SECRETS_KEY_ID', key.keyArn);
  }

  /**
   * The implicit grant of every authenticated function: UpdateItem on the rate-limit counters
   * only (`dynamodb:LeadingKeys` like `RATE#*`), which holds even for a read-only function.
   */
  bindRateLimitCounters(table: dynamodb.ITable): void {
    iam.Grant.addToPrincipal({
      grantee: this,
      actions: ['dynamodb:UpdateItem'],
      resourceArns: [table.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': [`${RATE_COUNTER_KEY_PREFIX}*`] } },
    });
  }

  /** Grants sending to a job's queue and tells the function its URL (queueUrlVariable(name)). */
  bindSendQueue({ name, queue }: { name: string; queue: sqs.IQueue }): void {
    queue.grantSendMessages(this);
    this.addEnvironment(queueUrlVariable(name), queue.queueUrl);
  }

  /** Grants reading the carrier's credentials secret and tells the function the provider and the secret (TELEPHONY_PROVIDER, TWILIO_SECRET_ARN). */
  bindTelephony({ provider, secret }: { provider: string; secret: secretsmanager.ISecret }): void {
    secret.grantRead(this);
    this.addEnvironment('TELEPHONY_PROVIDER', provider);
    this.addEnvironment('TWILIO_SECRET_ARN', secret.secretArn);
  }

  /**
   * Tells the function which model provider to use (`<PREFIX>_PROVIDER`, `_BASE_URL`, `_MODEL`,
   * `_TIMEOUT_MS`) and, when the provider has a key, grants reading its secret (`<PREFIX>_SECRET_ARN`).
   */
  bindModelProvider({ environment, secret, secretVariable }: ModelProviderTarget): void {
    for (const [name, value] of Object.entries(environment)) this.addEnvironment(name, value);
    if (!secret) return;
    secret.grantRead(this);
    this.addEnvironment(secretVariable, secret.secretArn);
  }

  /** Grants reading the token-signing secret and tells the function where it is (TOKEN_SECRET_ARN). */
  bindTokens(secret: secretsmanager.ISecret): void {
    secret.grantRead(this);
    this.addEnvironment('TOKEN_SECRET_ARN', secret.secretArn);
  }

  /** Applies an `Access` declaration from a registry: each field becomes the matching grant. */
  applyAccess(access: Access, targets: AccessTargets, owner: string): void {
    if (access.table) this.bindTable({ table: targets.table, accessMode: access.table });
    if (access.bucket === 'head' || (access.bucket && access.bucketList)) {
      // HeadBucket needs an unconditioned s3:ListBucket; listing is narrowed to the prefixes.
      this.bindBucketList({ bucket: targets.bucket, prefixes: access.bucket === 'head' ? undefined : access.bucketPrefixes });
    }
    if (access.bucket && access.bucket !== 'head') this.bindBucket({ bucket: targets.bucket, accessMode: access.bucket, prefixes: access.bucketPrefixes });
    if (access.rateLimitCounters) this.bindRateLimitCounters(targets.table);
    if (access.secrets) this.bindSecretsKey(targets.secretsKey);
    if (access.telephony) {
      if (!targets.telephony) throw new Error(`${owner} talks to the carrier, but no telephony settings were given.`);
      this.bindTelephony(targets.telephony);
    }
    if (access.analysis) {
      if (!targets.analysis) throw new Error(`${owner} analyses calls, but no analysis settings were given.`);
      this.bindModelProvider(targets.analysis);
    }
    if (access.llm) {
      if (!targets.llm) throw new Error(`${owner} runs the conversation model, but no model settings were given.`);
      this.bindModelProvider(targets.llm);
    }
    if (access.tokens) {
      if (!targets.tokens) throw new Error(`${owner} signs or verifies tokens, but no token secret was given.`);
      this.bindTokens(targets.tokens);
    }
    for (const name of access.queues ?? []) {
      const queue = targets.queues.get(name);
      if (!queue) {
        throw new Error(
          `${owner} sends to queue "${name}", but no queue job has that name (known: ${[...targets.queues.keys()].join(', ') || 'none'}).`,
        );
      }
      this.bindSendQueue({ name, queue });
    }
  }
}

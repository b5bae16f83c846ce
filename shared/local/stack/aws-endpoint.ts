/**
 * One local HTTP endpoint for every AWS SDK call of the functions the stack runner starts (their
 * `AWS_ENDPOINT_URL`). It mirrors what a Lambda function's role meets in AWS: each request is
 * identified by the access key in its SigV4 credential (`Authorization: AWS4-HMAC-SHA256
 * Credential=AKID/date/region/SERVICE/aws4_request`, or the `X-Amz-Credential` of a presigned
 * URL), the key names a role, and the role's identity statements decide, through ./iam.ts,
 * whether the action on the resource is allowed; a refusal is answered as the service answers it
 * (AccessDenied with IAM's message) and reported to `onDenied`.
 *
 * What it refuses, as AWS does: an unsigned request (403 MissingAuthenticationToken, or S3's
 * AccessDenied), an unknown access key (UnrecognizedClientException, or S3's InvalidAccessKeyId),
 * and any service or operation it does not serve (400 UnknownOperationException naming it, never
 * a silent 200). It does NOT verify signatures cryptographically: the callers are our own
 * functions with fake keys, so the signature is only required to be present, not checked.
 *
 * Services (one module each under ./aws/): DynamoDB and S3 forwarded to DynamoDB Local and the S3
 * emulator after authorization; SQS, KMS, Secrets Manager and the API Gateway Management API
 * served here; CloudWatch metrics, X-Ray and CloudWatch Logs accepted and evaluated.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { evaluatePolicy, type ResolvedStatement } from './iam';
import { apiGatewayManagementService, type LocalWebSocketApi } from './aws/apigateway';
import { dynamoService } from './aws/dynamodb';
import { kmsService, type LocalKmsKey } from './aws/kms';
import { newRequestId, readAll, sendJsonError, sendRestJsonError, sendS3Error, deniedMessage, type AwsCall, type AwsDenial } from './aws/protocol';
import { s3Service } from './aws/s3';
import { secretsManagerService, type LocalSecretStore } from './aws/secrets';
import { sqsService, type LocalSqsQueue } from './aws/sqs';
import { telemetryServices, type RecordedMetrics } from './aws/telemetry';

export type { AwsDenial } from './aws/protocol';
export type { LocalSqsQueue, SqsMessageAttributes } from './aws/sqs';
export { LocalSecretStore, type LocalSecret } from './aws/secrets';
export type { LocalKmsKey } from './aws/kms';
export type { LocalWebSocketApi } from './aws/apigateway';
export type { ResolvedStatement } from './iam';

/** The role behind one access key. */
export interface LocalPrincipal {
  roleName: string;
  /** The STS session name (Lambda uses the function's name); default: the role name. */
  sessionName?: string;
  statements: ResolvedStatement[];
}

export interface LocalAwsOptions {
  region: string;
  accountId: string;
  /** The role an access key belongs to; undefined: the key is unknown (UnrecognizedClientException). */
  principal(accessKeyId: string): LocalPrincipal | undefined;
  /** DynamoDB Local, started with sharedDb: requests are forwarded there. */
  dynamoEndpoint: string;
  /** An S3-compatible server (s3rver), path-style: requests are forwarded there. */
  s3Endpoint: string;
  /** Tables, for their ARNs (and `<arn>/index/<name>` for indexes). */
  tables: { name: string; arn: string }[];
  queues: LocalSqsQueue[];
  secrets: LocalSecretStore;
  kmsKeys: LocalKmsKey[];
  webSocketApis?: LocalWebSocketApi[];
  /** Host to listen on (default 127.0.0.1) and port (default 0: any free port). */
  host?: string;
  port?: number;
  /** The time presigned S3 URLs are checked against (default Date.now). */
  now?: () => number;
  /** SQS's largest message body (default 262144, the limit this project designs for). */
  sqsMaxMessageBytes?: number;
  onDenied?(denial: AwsDenial): void;
  log?(line: string): void;
}

export interface LocalAws {
  endpoint: string;
  port: number;
  /** Every refused call since start, in order. */
  denials: AwsDenial[];
  /** PutMetricData calls that were allowed, in order. */
  metrics: RecordedMetrics[];
  /**
   * The URL to give functions for a queue (`<endpoint>/<account>/<name>`). An SQS client configured by
   * AWS_ENDPOINT_URL alone sends each call to its QueueUrl's host, so a template's
   * `https://sqs.<region>.amazonaws.com/…` URL would leave this machine.
   */
  queueUrl(name: string): string;
  close(): Promise<void>;
}

/** The credential of a SigV4-signed request: header-signed or presigned (query). */
export interface SigV4Credential {
  accessKeyId: string;
  region: string;
  service: string;
}

/** Reads the SigV4 credential scope from the Authorization header or the X-Amz-Credential query parameter. */
export function parseSigV4Credential(req: Pick<IncomingMessage, 'headers'>, url: URL): SigV4Credential | undefined {
  const header = req.headers.authorization ?? '';
  const fromHeader = /^AWS4-HMAC-SHA256\s+Credential=([^,\s]+)/.exec(header)?.[1];
  const signed = fromHeader ? /Signature=[0-9a-f]+/.test(header) : url.searchParams.has('X-Amz-Signature');
  const scope = fromHeader ?? url.searchParams.get('X-Amz-Credential');
  const parts = scope?.split('/');
  if (!signed || !parts || parts.length !== 5 || parts[4] !== 'aws4_request') return undefined;
  return { accessKeyId: parts[0]!, region: parts[2]!, service: parts[3]! };
}

type ServiceHandler = (call: AwsCall) => Promise<void>;

/** Starts the endpoint; `close()` stops it. */
export async function startLocalAws(options: LocalAwsOptions): Promise<LocalAws> {
  const denials: AwsDenial[] = [];
  const metrics: RecordedMetrics[] = [];
  const log = options.log ?? (() => undefined);
  const telemetry = telemetryServices(metrics);
  const dynamodb = dynamoService(options);
  const services: Record<string, ServiceHandler> = {
    dynamodb,
    s3: s3Service(options),
    sqs: sqsService(options),
    kms: kmsService(options),
    secretsmanager: secretsManagerService(options),
    'execute-api': apiGatewayManagementService(options),
    ...telemetry,
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const requestId = newRequestId();
    const credential = parseSigV4Credential(req, url);
    const bare = { req, res, requestId };
    if (!credential) return refuseCaller(bare, url, 'unsigned');
    const principal = options.principal(credential.accessKeyId);
    if (!principal) return refuseCaller(bare, url, 'unknown-key');
    const callerArn = `arn:aws:sts::${options.accountId}:assumed-role/${principal.roleName}/${principal.sessionName ?? principal.roleName}`;
    let body: Promise<Buffer> | undefined;
    const call: AwsCall = {
      ...bare,
      url,
      service: credential.service,
      roleName: principal.roleName,
      callerArn,
      region: options.region,
      accountId: options.accountId,
      body: () => (body ??= readAll(req)),
      log,
      authorize(action, resource, context = {}) {
        const decision = evaluatePolicy(principal.statements, action, resource, context);
        if (decision === 'Allowed') return undefined;
        const denial: AwsDenial = { roleName: principal.roleName, action, resource, service: credential.service, decision };
        denial.message = deniedMessage(callerArn, denial);
        denials.push(denial);
        log(`AccessDenied: ${principal.roleName} ${action} on ${resource}`);
        options.onDenied?.(denial);
        return denial;
      },
    };
    const service = services[credential.service];
    if (!service) return unknownOperation(call, `service "${credential.service}"`);
    await service(call);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: Error) => {
      log(`local AWS endpoint: ${req.method} ${req.url} failed: ${err.stack ?? err.message}`);
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ __type: 'InternalFailure', message: err.message }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | undefined;
  const endpoint = `http://${options.host ?? '127.0.0.1'}:${port}`;
  return {
    endpoint,
    port,
    denials,
    metrics,
    queueUrl: (name) => `${endpoint}/${options.accountId}/${name}`,
    close: () =>
      (closing ??= new Promise<void>((resolve) => {
        dynamodb.close();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

/** Answers an operation this endpoint does not serve: a clear 400 that names it, logged. */
export function unknownOperation(call: AwsCall, what: string): void {
  const message = `The local AWS endpoint does not serve ${what} (${call.req.method} ${call.url.pathname}).`;
  call.log(`UnknownOperationException: ${message}`);
  if (call.req.headers['x-amz-target']) sendJsonError(call, { status: 400, code: 'UnknownOperationException', message });
  else if (call.service === 's3') sendS3Error(call, 400, 'UnknownOperationException', message);
  else sendRestJsonError(call, 400, 'UnknownOperationException', message);
}

/** An unsigned request or an unknown key, refused in the protocol the request speaks. */
function refuseCaller(call: Pick<AwsCall, 'req' | 'res' | 'requestId'>, url: URL, why: 'unsigned' | 'unknown-key'): void {
  const target = call.req.headers['x-amz-target'];
  const restJson = /\/@connections\/|^\/TraceSegments$/.test(url.pathname);
  if (!target && !restJson) {
    // S3: an anonymous request is simply denied; a presigned or signed one with an unknown key is named.
    if (why === 'unsigned') return sendS3Error(call, 403, 'AccessDenied', 'Access Denied');
    const key = parseSigV4Credential(call.req, url)?.accessKeyId ?? '';
    return sendS3Error(call, 403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', { AWSAccessKeyId: key });
  }
  const [code, status, message] =
    why === 'unsigned'
      ? ['MissingAuthenticationTokenException', 403, 'Request is missing Authentication Token']
      : ['UnrecognizedClientException', 400, 'The security token included in the request is invalid.'];
  if (restJson) return sendRestJsonError(call, status, code, message);
  const sqs = String(target).startsWith('AmazonSQS.');
  sendJsonError(call, {
    status,
    code,
    message,
    namespace: 'com.amazon.coral.service',
    ...(sqs ? { queryError: [code.replace(/Exception$/, ''), 'Sender'] as [string, 'Sender'] } : {}),
  });
}

import type { S3Client } from '@aws-sdk/client-s3';
import { checkS3, guardClient } from '../access/enforce';
import { config } from '../config';
import { addFaultPoint, localRetryStrategy } from '../fault-point';
import { traceAwsClient } from '../telemetry/aws';

let client: Promise<S3Client> | undefined;

/** The S3 client's default number of attempts in this SDK (test/integration/local/faults.test.ts checks it). */
export const S3_MAX_ATTEMPTS = 3;

/**
 * The S3 client, built once (the local S3-compatible server when S3_ENDPOINT is set). The SDK's
 * S3 module is loaded on first use, not at cold start: most functions that may touch the bucket
 * (knowledge-base reads, calls without a recording) never do on most paths.
 */
export function s3(): Promise<S3Client> {
  client ??= import('@aws-sdk/client-s3').then(({ S3Client }) => {
    const { region, s3Endpoint } = config();
    const created = new S3Client({
      region,
      // Presigned PUT URLs must not carry the checksum of an empty body, or S3 refuses the upload.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      ...(s3Endpoint
        ? { endpoint: s3Endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' }, retryStrategy: localRetryStrategy(S3_MAX_ATTEMPTS) }
        : {}),
    });
    // The local mirror of IAM: inside a function's access context, a call outside its grants fails.
    guardClient(created, 'accessGuard', (command, input) => checkS3(command, input, config().bucketName));
    addFaultPoint(created, 's3');
    traceAwsClient(created, 'S3');
    return created;
  });
  return client;
}

/** The S3 module itself, loaded on first use (its command classes). */
export const s3Commands = () => import('@aws-sdk/client-s3');

/** Whether the bucket answers (readiness). */
export async function bucketReachable(): Promise<void> {
  const { HeadBucketCommand } = await s3Commands();
  await (await s3()).send(new HeadBucketCommand({ Bucket: config().bucketName }));
}

/** Drop the cached client (tests). */
export function resetBlobStore(): void {
  client = undefined;
}

import { HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { checkS3, guardClient } from '../access/enforce';
import { config } from '../config';

let client: S3Client | undefined;

/** The S3 client, built once (the local S3-compatible server when S3_ENDPOINT is set). */
export function s3(): S3Client {
  if (client) return client;
  const { region, s3Endpoint } = config();
  client = new S3Client({
    region,
    // Presigned PUT URLs must not carry the checksum of an empty body, or S3 refuses the upload.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    ...(s3Endpoint
      ? { endpoint: s3Endpoint, forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } }
      : {}),
  });
  // The local mirror of IAM: inside a function's access context, a call outside its grants fails.
  guardClient(client, 'accessGuard', (command, input) => checkS3(command, input, config().bucketName));
  return client;
}

/** Whether the bucket answers (readiness). */
export async function bucketReachable(): Promise<void> {
  await s3().send(new HeadBucketCommand({ Bucket: config().bucketName }));
}

/** Drop the cached client (tests). */
export function resetBlobStore(): void {
  client = undefined;
}

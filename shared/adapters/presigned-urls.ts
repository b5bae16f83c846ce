import { config } from '../config';
import { s3, s3Commands } from './blob-store';

/**
 * Presigned links to the bucket's objects (knowledge-base uploads, call recordings). A module of
 * its own, apart from ./kb-objects.ts: a function that reaches the object store but never
 * presigns (a chat turn grounding on a knowledge base) would otherwise carry the presigner's lazy
 * import, and esbuild makes a chunk of a dynamic import even in code it drops, splitting what the
 * function loads at start by it (docs/operations.md, "Bundles and cold starts"). The presigner
 * loads on the first call.
 */
const presigner = () => import('@aws-sdk/s3-request-presigner');

/**
 * A presigned PUT for one object. Content type and length are signed, so S3 refuses a body
 * of another type or size than the one declared.
 */
export async function presignPut(key: string, contentType: string, contentLength: number, expiresInSeconds: number): Promise<string> {
  const [{ PutObjectCommand }, { getSignedUrl }, client] = await Promise.all([s3Commands(), presigner(), s3()]);
  const command = new PutObjectCommand({ Bucket: config().bucketName, Key: key, ContentType: contentType, ContentLength: contentLength });
  return getSignedUrl(client, command, { expiresIn: expiresInSeconds, signableHeaders: new Set(['content-type', 'content-length']) });
}

/** A presigned GET for one object (call recordings: a short-lived download link). */
export async function presignGet(key: string, expiresInSeconds: number): Promise<string> {
  const [{ GetObjectCommand }, { getSignedUrl }, client] = await Promise.all([s3Commands(), presigner(), s3()]);
  return getSignedUrl(client, new GetObjectCommand({ Bucket: config().bucketName, Key: key }), { expiresIn: expiresInSeconds });
}

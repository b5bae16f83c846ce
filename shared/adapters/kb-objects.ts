import type { GetObjectCommandOutput } from '@aws-sdk/client-s3';
import { config } from '../config';
import { s3, s3Commands } from './blob-store';

/**
 * Object storage as the knowledge base needs it: put, get, delete by prefix (presigned links:
 * ./presigned-urls.ts). The S3 module loads on the first call, so a function whose path never
 * touches the bucket does not pay for it at cold start.
 */

/** Puts an object; `tags` become its object tags (lifecycle rules can select objects by tag). */
export async function putObject(key: string, body: string | Uint8Array, contentType: string, tags?: Record<string, string>): Promise<void> {
  const Tagging = tags ? new URLSearchParams(tags).toString() : undefined;
  const { PutObjectCommand } = await s3Commands();
  await (await s3()).send(new PutObjectCommand({ Bucket: config().bucketName, Key: key, Body: body, ContentType: contentType, ...(Tagging ? { Tagging } : {}) }));
}

export interface StoredObject {
  body: Buffer;
  contentType: string;
  size: number;
}

/** An object's bytes, or undefined when it does not exist; refuses objects above `maxBytes`. */
export async function getObject(key: string, maxBytes = Number.POSITIVE_INFINITY): Promise<StoredObject | undefined> {
  const { GetObjectCommand } = await s3Commands();
  const client = await s3();
  let out: GetObjectCommandOutput;
  try {
    out = await client.send(new GetObjectCommand({ Bucket: config().bucketName, Key: key }));
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return undefined;
    throw err;
  }
  const size = out.ContentLength ?? 0;
  if (size > maxBytes) {
    await out.Body?.transformToByteArray().catch(() => undefined);
    throw new ObjectTooLargeError(key, size, maxBytes);
  }
  const bytes = await out.Body!.transformToByteArray();
  return { body: Buffer.from(bytes), contentType: out.ContentType ?? '', size: bytes.length };
}

export class ObjectTooLargeError extends Error {
  constructor(readonly key: string, readonly size: number, readonly maxBytes: number) {
    super(`the object is ${size} bytes; at most ${maxBytes} are accepted`);
  }
}

/** Deletes every object under a prefix, a page of 1,000 at a time. */
export async function deletePrefix(prefix: string): Promise<number> {
  let deleted = 0;
  for (let more = true; more; ) {
    const page = await deletePrefixPage(prefix);
    deleted += page.deleted;
    more = page.more;
  }
  return deleted;
}

/**
 * Deletes one page (up to 1,000) of the objects under a prefix: bounded work for a job that
 * re-queues itself. `more` says whether objects remain after this page.
 */
export async function deletePrefixPage(prefix: string): Promise<{ deleted: number; more: boolean }> {
  const bucket = config().bucketName;
  const { ListObjectsV2Command, DeleteObjectsCommand } = await s3Commands();
  const client = await s3();
  const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
  const objects = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
  if (objects.length) await client.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: objects, Quiet: true } }));
  return { deleted: objects.length, more: !!page.IsTruncated };
}

/** Deletes the given objects (missing ones are fine). */
export async function deleteObjects(keys: string[]): Promise<void> {
  if (!keys.length) return;
  const { DeleteObjectsCommand } = await s3Commands();
  await (await s3()).send(new DeleteObjectsCommand({ Bucket: config().bucketName, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }));
}


import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { Transform, type TransformCallback } from 'node:stream';
import { CreateBucketCommand, HeadBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import Account from 's3rver/lib/models/account';
import { localCredentials } from './dynamo';

export interface S3LocalOptions {
  /** Where objects are kept on disk. */
  directory: string;
  /** 0 or absent: a free port is picked. */
  port?: number;
  /** Created if missing. */
  buckets?: string[];
}

export interface S3Local {
  endpoint: string;
  port: number;
  directory: string;
  /** Closes the server; objects stay on disk. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts s3rver (an S3-compatible server on the local disk). Two gaps of s3rver 3.7 with the
 * current AWS SDK are closed here (measured, see test/integration/local/storage.test.ts):
 * - it knows one access key (S3RVER) and rejects any other, so every key maps to its dummy
 *   account (it does not verify v4 signatures anyway);
 * - it stores aws-chunked uploads as they come, framing included: the SDK sends streaming
 *   bodies that way to add a checksum trailer, so such bodies are decoded before s3rver sees them.
 */
export async function startS3Local(options: S3LocalOptions): Promise<S3Local> {
  acceptAnyAccessKey();
  const directory = resolve(options.directory);
  mkdirSync(directory, { recursive: true });
  const server = new S3rver({
    address: '127.0.0.1',
    port: options.port ?? 0,
    directory,
    silent: true,
    vhostBuckets: false,
    allowMismatchedSignatures: true,
  });
  server.middleware.unshift(decodeAwsChunkedUploads);
  const address = await server.run();
  const endpoint = `http://127.0.0.1:${address.port}`;
  let stopping: Promise<void> | undefined;
  const stop = () => (stopping ??= server.close().catch(() => undefined));
  try {
    for (const bucket of options.buckets ?? []) await ensureBucket(endpoint, bucket);
  } catch (err) {
    await stop();
    throw err;
  }
  return { endpoint, port: address.port, directory, stop };
}

/** An S3 client for the local server (path-style addressing, dummy credentials). */
export function localS3Client(endpoint: string): S3Client {
  return new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: localCredentials });
}

/** Creates the bucket unless it exists. */
export async function ensureBucket(endpoint: string, bucket: string): Promise<{ created: boolean }> {
  const s3 = localS3Client(endpoint);
  try {
    await s3.send(new HeadBucketCommand({ Bucket: bucket }));
    return { created: false };
  } catch (err) {
    if ((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode !== 404) throw err;
    await s3.send(new CreateBucketCommand({ Bucket: bucket }));
    return { created: true };
  } finally {
    s3.destroy();
  }
}

let anyKeyAccepted = false;
function acceptAnyAccessKey(): void {
  if (anyKeyAccepted) return;
  anyKeyAccepted = true;
  const registry = Account.registry;
  const known = registry.get.bind(registry);
  registry.get = (accessKeyId: string) => known(accessKeyId) ?? Account.DUMMY_ACCOUNT;
}

type KoaMiddleware = S3rver['middleware'][number];

const decodeAwsChunkedUploads: KoaMiddleware = async (ctx, next) => {
  const sha = ctx.get('x-amz-content-sha256');
  const encoding = ctx.get('content-encoding');
  if (sha.startsWith('STREAMING-') || /\baws-chunked\b/.test(encoding)) {
    const original = ctx.req;
    const headers = original.headers ?? {};
    const decodedLength = ctx.get('x-amz-decoded-content-length');
    if (decodedLength) headers['content-length'] = decodedLength;
    const rest = encoding.split(',').map((e) => e.trim()).filter((e) => e && e !== 'aws-chunked');
    if (rest.length) headers['content-encoding'] = rest.join(', ');
    else delete headers['content-encoding'];
    headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
    const decoded = new AwsChunkedDecoder();
    original.on('error', (err: Error) => decoded.destroy(err));
    ctx.req = original.pipe(decoded) as unknown as typeof ctx.req;
  }
  await next();
};

/**
 * Decodes the aws-chunked content encoding: `<hex size>[;chunk-signature=…]\r\n<bytes>\r\n`
 * repeated, a zero-size chunk, then optional trailer lines (checksums) and an empty line.
 */
export class AwsChunkedDecoder extends Transform {
  private buffer: Buffer = Buffer.alloc(0);
  private state: 'size' | 'data' | 'data-end' | 'trailer' | 'done' = 'size';
  private remaining = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    try {
      this.parse();
      callback();
    } catch (err) {
      callback(err as Error);
    }
  }

  override _flush(callback: TransformCallback): void {
    callback(this.state === 'done' || this.state === 'trailer' ? null : new Error('Truncated aws-chunked body'));
  }

  private parse(): void {
    for (;;) {
      if (this.state === 'data') {
        if (!this.buffer.length) return;
        const take = Math.min(this.remaining, this.buffer.length);
        this.push(this.buffer.subarray(0, take));
        this.buffer = this.buffer.subarray(take);
        this.remaining -= take;
        if (this.remaining === 0) this.state = 'data-end';
        continue;
      }
      if (this.state === 'done') {
        this.buffer = Buffer.alloc(0);
        return;
      }
      const eol = this.buffer.indexOf('\r\n');
      if (eol < 0) return;
      const line = this.buffer.subarray(0, eol).toString('latin1');
      this.buffer = this.buffer.subarray(eol + 2);
      if (this.state === 'data-end') {
        if (line !== '') throw new Error('Malformed aws-chunked body: chunk longer than its size');
        this.state = 'size';
      } else if (this.state === 'size') {
        const size = parseInt(line.split(';')[0]!, 16);
        if (!Number.isFinite(size) || size < 0) throw new Error(`Malformed aws-chunked size line "${line}"`);
        if (size === 0) this.state = 'trailer';
        else {
          this.remaining = size;
          this.state = 'data';
        }
      } else if (this.state === 'trailer' && line === '') {
        this.state = 'done';
      }
    }
  }
}

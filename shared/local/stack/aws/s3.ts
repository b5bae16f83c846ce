/**
 * S3 (REST-XML, path-style `/<bucket>/<key>`: the endpoint is an IP address, so the SDK never
 * puts the bucket in the host name) for the local AWS endpoint.
 *
 * It mirrors IAM's S3 actions: GetObject (GET/HEAD of an object), PutObject (PUT, and every
 * multipart step but abort and list-parts; a copy also needs GetObject on its source),
 * DeleteObject (DELETE, and each key of a POST ?delete), ListBucket (GET or HEAD of a bucket,
 * with the `s3:prefix` condition key, '' when absent), on `arn:aws:s3:::bucket/key` or
 * `arn:aws:s3:::bucket`; a refusal is S3's 403 AccessDenied XML with IAM's message. Presigned
 * URLs are authorized like signed requests, by their X-Amz-Credential, and refused once expired
 * (X-Amz-Date + X-Amz-Expires, against `now`) with S3's "Request has expired".
 *
 * An allowed request is forwarded to the S3 emulator with its method, path, query (less the
 * presigning parameters) and body (streamed), without its Authorization header: the emulator
 * would otherwise check a signature made for this host. Bucket sub-resources it does not map
 * (?policy, ?cors, …) are refused as UnknownOperationException.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { RequestContext } from '../iam';
import { deniedMessage, proxy, sendS3Error, type AwsCall } from './protocol';

interface S3Options {
  s3Endpoint: string;
  now?: () => number;
}

interface S3Check {
  action: string;
  resource: string;
  context?: RequestContext;
}

/** Query parameters that carry a presigned URL's signature, not the request. */
const PRESIGN_PARAMS = ['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature', 'X-Amz-Security-Token'];

/** Serves S3: authorize, then forward to the emulator. */
export function s3Service(options: S3Options) {
  return async (call: AwsCall): Promise<void> => {
    const { bucket, key } = splitPath(call.url.pathname);
    const query = call.url.searchParams;
    const expired = presignedExpiry(query, (options.now ?? Date.now)());
    if (expired) return sendS3Error(call, 403, 'AccessDenied', 'Request has expired', expired);
    const method = call.req.method ?? 'GET';
    const needsBody = !!bucket && !key && method === 'POST' && query.has('delete');
    const body = needsBody ? await call.body() : call.req;
    const checks = needsBody ? deleteObjectsChecks(bucket, (body as Buffer).toString('utf8')) : checksFor(method, bucket, key, query, call.req.headers);
    if (!checks) return sendS3Error(call, 400, 'UnknownOperationException', `The local AWS endpoint does not serve S3 ${method} ${call.url.pathname}${call.url.search}.`);
    for (const check of checks) {
      const denial = call.authorize(check.action, check.resource, check.context);
      if (denial) return sendS3Error(call, 403, 'AccessDenied', deniedMessage(call.callerArn, denial, { quoteResource: true }));
    }
    const forwarded = new URLSearchParams(query);
    for (const name of PRESIGN_PARAMS) forwarded.delete(name);
    const search = forwarded.toString();
    await proxy(call.res, {
      endpoint: options.s3Endpoint,
      method,
      path: `${call.url.pathname}${search ? `?${search.replace(/=(&|$)/g, '$1')}` : ''}`,
      headers: withoutSignature(call.req.headers),
      body,
    });
  };
}

/** The checks of one request; undefined: an operation this endpoint does not map. */
function checksFor(method: string, bucket: string, key: string, query: URLSearchParams, headers: IncomingHttpHeaders): S3Check[] | undefined {
  if (!bucket) return method === 'GET' ? [{ action: 's3:ListAllMyBuckets', resource: '*' }] : undefined;
  const bucketArn = `arn:aws:s3:::${bucket}`;
  if (!key) {
    const listing: S3Check = { action: 's3:ListBucket', resource: bucketArn, context: { 's3:prefix': query.get('prefix') ?? '' } };
    const sub = subResource(query);
    if (method === 'HEAD') return [listing];
    if (method === 'GET' && sub === '') return [listing];
    if (method === 'GET' && sub === 'location') return [{ action: 's3:GetBucketLocation', resource: bucketArn }];
    if (method === 'GET' && sub === 'uploads') return [{ action: 's3:ListBucketMultipartUploads', resource: bucketArn }];
    if (method === 'PUT' && sub === '') return [{ action: 's3:CreateBucket', resource: bucketArn }];
    if (method === 'DELETE' && sub === '') return [{ action: 's3:DeleteBucket', resource: bucketArn }];
    return undefined;
  }
  const objectArn = `${bucketArn}/${key}`;
  const copySource = headers['x-amz-copy-source'];
  const copy = typeof copySource === 'string' ? [{ action: 's3:GetObject', resource: `arn:aws:s3:::${decodeURIComponent(copySource.split('?')[0]!.replace(/^\//, ''))}` }] : [];
  const sub = subResource(query);
  const on = (action: string): S3Check[] => [{ action, resource: objectArn }];
  if ((method === 'GET' || method === 'HEAD') && (sub === '' || sub === 'partNumber')) return on('s3:GetObject');
  if (method === 'GET' && sub === 'tagging') return on('s3:GetObjectTagging');
  if (method === 'GET' && sub === 'uploadId') return on('s3:ListMultipartUploadParts');
  if (method === 'PUT' && (sub === '' || sub === 'uploadId')) return [...on('s3:PutObject'), ...copy];
  if (method === 'PUT' && sub === 'tagging') return on('s3:PutObjectTagging');
  if (method === 'POST' && (sub === 'uploads' || sub === 'uploadId')) return on('s3:PutObject');
  if (method === 'DELETE' && sub === 'uploadId') return on('s3:AbortMultipartUpload');
  if (method === 'DELETE' && sub === '') return on('s3:DeleteObject');
  return undefined;
}

/** For a presigned URL past X-Amz-Date + X-Amz-Expires: the fields of S3's "Request has expired" answer. */
function presignedExpiry(query: URLSearchParams, now: number): Record<string, string> | undefined {
  const signedAt = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(query.get('X-Amz-Date') ?? '');
  const seconds = Number(query.get('X-Amz-Expires'));
  if (!signedAt || !Number.isFinite(seconds)) return undefined;
  const [, y, mo, d, h, mi, sec] = signedAt.map(Number) as number[];
  const expires = Date.UTC(y!, mo! - 1, d!, h!, mi!, sec!) + seconds * 1000;
  if (now <= expires) return undefined;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { 'X-Amz-Expires': String(seconds), Expires: iso(expires), ServerTime: iso(now) };
}

/** DeleteObjects (POST ?delete): IAM checks s3:DeleteObject on every key it names. */
function deleteObjectsChecks(bucket: string, xml: string): S3Check[] {
  const keys = [...xml.matchAll(/<Key>([\s\S]*?)<\/Key>/g)].map((m) => decodeXmlText(m[1]!));
  return keys.map((key) => ({ action: 's3:DeleteObject', resource: `arn:aws:s3:::${bucket}/${key}` }));
}

/** The sub-resource a request names (`uploads`, `tagging`, …), '' for none; listing parameters are not sub-resources. */
function subResource(query: URLSearchParams): string {
  const known = ['uploads', 'uploadId', 'tagging', 'location', 'delete', 'acl', 'policy', 'cors', 'versions', 'versioning', 'lifecycle', 'notification', 'website', 'encryption', 'retention', 'legal-hold', 'attributes', 'restore', 'select'];
  const found = known.find((name) => query.has(name));
  if (found) return found;
  return query.has('partNumber') ? 'partNumber' : '';
}

function splitPath(pathname: string): { bucket: string; key: string } {
  const [, bucket = '', ...rest] = pathname.split('/');
  return { bucket: decodeURIComponent(bucket), key: rest.map((part) => decodeURIComponent(part)).join('/') };
}

function withoutSignature(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const { authorization: _authorization, 'x-amz-security-token': _token, ...rest } = headers;
  return rest;
}

const XML_ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
function decodeXmlText(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|\w+);/gi, (whole, entity: string) => {
    if (entity[0] === '#') return String.fromCodePoint(entity[1]!.toLowerCase() === 'x' ? parseInt(entity.slice(2), 16) : Number(entity.slice(1)));
    return XML_ENTITIES[entity] ?? whole;
  });
}

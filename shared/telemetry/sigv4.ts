import { createHash, createHmac } from 'node:crypto';

/** AWS credentials as Lambda gives them (its environment). */
export interface AwsCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * Signs one request with AWS Signature Version 4 (the signed headers: every header given, plus
 * `host` and `x-amz-date`); answers the headers to send. Small on purpose: the X-Ray OTLP
 * endpoint is the only request signed here, and the AWS SDK's signer would bring its
 * credential chain into the tracing chunk.
 */
export function signV4(request: { method: string; url: URL; headers: Record<string, string>; body: string | Uint8Array }, options: { service: string; region: string; credentials: AwsCredentials; now?: Date }): Record<string, string> {
  const amzDate = (options.now ?? new Date()).toISOString().replace(/[-:]|\.\d{3}/g, '');
  const day = amzDate.slice(0, 8);
  const headers: Record<string, string> = { ...lowerKeys(request.headers), host: request.url.host, 'x-amz-date': amzDate };
  if (options.credentials.sessionToken) headers['x-amz-security-token'] = options.credentials.sessionToken;
  const names = Object.keys(headers).sort();
  const query = [...request.url.searchParams.entries()]
    .map(([k, v]) => [encode(k), encode(v)])
    .sort(([a, x], [b, y]) => (a === b ? (x! < y! ? -1 : 1) : a! < b! ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const canonical = [request.method, request.url.pathname || '/', query, ...names.map((n) => `${n}:${headers[n]!.trim().replace(/\s+/g, ' ')}`), '', names.join(';'), sha256(request.body)].join('\n');
  const scope = `${day}/${options.region}/${options.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonical)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${options.credentials.secretAccessKey}`, day), options.region), options.service), 'aws4_request');
  const signature = createHmac('sha256', key).update(toSign).digest('hex');
  return { ...headers, authorization: `AWS4-HMAC-SHA256 Credential=${options.credentials.accessKeyId}/${scope}, SignedHeaders=${names.join(';')}, Signature=${signature}` };
}

const encode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const lowerKeys = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));

import { request } from 'node:https';
import { ProtobufTraceSerializer } from '@opentelemetry/otlp-transformer';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace';
import { signV4 } from './sigv4';

/** ExportResultCode of @opentelemetry/core: SUCCESS 0, FAILED 1. */
const SUCCESS = 0;
const FAILED = 1;

/** The region of an X-Ray OTLP endpoint (`https://xray.<region>.amazonaws.com/v1/traces`), or undefined for any other URL. */
export function xrayRegionOf(endpoint: string | undefined): string | undefined {
  if (!endpoint) return undefined;
  try {
    return /^xray\.([a-z0-9-]+)\.amazonaws\.com$/.exec(new URL(endpoint).hostname)?.[1];
  } catch {
    return undefined;
  }
}

/**
 * OTLP/HTTP (protobuf) to X-Ray's OTLP endpoint, each request signed with SigV4 by the
 * function's own credentials (Lambda's environment) for the `xray` service: the deployed
 * choice (docs/operations.md, "Traces"). Sent with node:https, not fetch, so that the fetch
 * instrumentation does not trace the export itself.
 */
export class XRayOtlpExporter implements SpanExporter {
  constructor(private readonly url: URL, private readonly region: string, private readonly timeoutMs = 10_000) {}

  export(spans: ReadableSpan[], done: (result: { code: number; error?: Error }) => void): void {
    const body = ProtobufTraceSerializer.serializeRequest(spans);
    if (!body) return done({ code: FAILED, error: new Error('spans could not be serialized') });
    const { AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_SESSION_TOKEN: sessionToken } = process.env;
    if (!accessKeyId || !secretAccessKey) return done({ code: FAILED, error: new Error('no AWS credentials in the environment to sign the X-Ray export') });
    const headers = signV4(
      { method: 'POST', url: this.url, headers: { 'content-type': 'application/x-protobuf' }, body },
      { service: 'xray', region: this.region, credentials: { accessKeyId, secretAccessKey, sessionToken } },
    );
    const req = request(this.url, { method: 'POST', headers: { ...headers, 'content-length': String(body.byteLength) }, timeout: this.timeoutMs }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) done({ code: SUCCESS });
        else done({ code: FAILED, error: new Error(`X-Ray OTLP endpoint answered ${status}: ${Buffer.concat(parts).toString('utf8').slice(0, 200)}`) });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`X-Ray OTLP export timed out after ${this.timeoutMs} ms`)));
    req.on('error', (error) => done({ code: FAILED, error }));
    req.end(body);
  }

  async shutdown(): Promise<void> {}
}

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One exported span, flattened from OTLP/HTTP JSON (attribute values unwrapped). */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's SpanKind number: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
  /** The span's links (OTLP `links`): the spans of other traces it names. */
  links: { traceId: string; spanId: string }[];
}

export interface OtlpReceiver {
  /** The base URL (OTEL_EXPORTER_OTLP_ENDPOINT); the exporter posts to `${url}/v1/traces`. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests that were not OTLP JSON (the test fails on any). */
  rejected: string[];
  /** Resolves once a span matching `match` arrived (rejects after `timeoutMs`, listing what did). */
  waitFor(match: (s: ReceivedSpan) => boolean, timeoutMs?: number): Promise<ReceivedSpan>;
  /**
   * From now on, export requests are read (their spans kept) but not answered until the returned
   * function is called: an exporter that waits for its answer waits that long.
   */
  hold(): () => void;
  /** Export requests read but not answered yet (while held). */
  readonly unanswered: number;
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: number | string; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };

function unwrap(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(unwrap);
  return undefined;
}

const attributesOf = (list: { key: string; value: AnyValue }[] | undefined) => Object.fromEntries((list ?? []).map((a) => [a.key, unwrap(a.value)]));

/**
 * An in-process OTLP/HTTP trace receiver for tests: a node:http server taking
 * `POST /v1/traces` with the JSON encoding (the protocol the platform's exporter speaks,
 * `@opentelemetry/exporter-trace-otlp-http`) and keeping every span, flattened.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const rejected: string[] = [];
  const waiters = new Set<() => void>();
  let held: Array<() => void> | undefined;
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      const type = String(req.headers['content-type'] ?? '');
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !type.startsWith('application/json')) {
        rejected.push(`${req.method} ${req.url} ${type}`);
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(parts).toString('utf8')) as {
        resourceSpans?: { resource?: { attributes?: any[] }; scopeSpans?: { spans?: any[] }[] }[];
      };
      for (const rs of body.resourceSpans ?? []) {
        const resource = attributesOf(rs.resource?.attributes);
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({ traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId || undefined, name: s.name, kind: s.kind, attributes: attributesOf(s.attributes), resource, links: ((s.links ?? []) as { traceId: string; spanId: string }[]).map((l) => ({ traceId: l.traceId, spanId: l.spanId })) });
          }
        }
      }
      const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      if (held) held.push(answer);
      else answer();
      for (const wake of [...waiters]) wake();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    spans,
    rejected,
    waitFor(match, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = spans.find(match);
          if (!found) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`No matching span within ${timeoutMs} ms; received: ${spans.map((s) => s.name).join(', ')}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      });
    },
    hold() {
      const answers = (held ??= []);
      return () => {
        if (held === answers) held = undefined;
        for (const answer of answers.splice(0)) answer();
      };
    },
    get unanswered() {
      return held?.length ?? 0;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

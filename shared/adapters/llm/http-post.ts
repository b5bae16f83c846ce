import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { inSpan, markFailed, SpanKind, withTraceHeaders, type Span } from '../../telemetry/tracing';

/**
 * A POST to the model provider over node:http(s) with keep-alive connections, in place of fetch:
 * measured on this machine, fetch (undici) reaches a response's first byte about 1.1 ms later
 * than node:http when the server takes its time (25 ms to the first token: fetch 27.7 ms,
 * node:http 26.6 ms p50, alternating in one process), on every model request of every reply
 * (docs/benchmarks.md, "(accuracy)"). What the adapter needs of a response: its status, its
 * headers, the body as bytes as they arrive, or whole as text. `signal` aborts the request and
 * the reading of its body; the error is the signal's reason, as with fetch (a TimeoutError from
 * AbortSignal.timeout, the caller's AbortError).
 *
 * Tracing on, the request is an HTTP client span (`POST`, the HTTP semantic conventions' client
 * attributes) from the request to the body's end, and sends its `traceparent`: undici's
 * instrumentation, which traces fetch, never sees node:http, and the http instrumentation cannot
 * patch a bundled module.
 */
export interface PostResponse {
  status: number;
  /** A response header (several values joined with ", "), or null; as fetch's `Headers.get`. */
  headers: { get(name: string): string | null };
  /** The body's bytes as they arrive; read once. */
  body: AsyncIterable<Uint8Array>;
  text(): Promise<string>;
}

const agents = {
  'http:': new http.Agent({ keepAlive: true }),
  'https:': new https.Agent({ keepAlive: true }),
};

const abortError = (signal: AbortSignal): unknown => signal.reason ?? Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });

export async function post(url: string, headers: Record<string, string>, body: string, signal: AbortSignal): Promise<PostResponse> {
  const target = new URL(url);
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new TypeError(`Only http and https URLs can be asked, got ${target.protocol}`);
  if (signal.aborted) throw abortError(signal);
  const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  const attributes = { 'http.request.method': 'POST', 'server.address': target.hostname, 'server.port': port, 'url.full': `${target.origin}${target.pathname}` };
  // The span ends with the body (read, failed or abandoned), not with the answer's headers.
  let settled!: () => void;
  let spanError: unknown;
  const bodyDone = new Promise<void>((resolve) => (settled = resolve));
  let answered!: (response: PostResponse) => void;
  let failed!: (err: unknown) => void;
  const response = new Promise<PostResponse>((resolve, reject) => ((answered = resolve), (failed = reject)));
  void inSpan('POST', { kind: SpanKind.CLIENT, attributes, recordErrors: false }, async (span) => {
    send(target, withTraceHeaders(headers), body, signal, span, settled, (err) => (spanError = err)).then(answered, (err: unknown) => {
      spanError = err;
      settled();
      failed(err);
    });
    await bodyDone;
    if (span && spanError !== undefined) {
      markFailed(span, (spanError as Error)?.message);
      span.setAttribute('error.type', (spanError as Error)?.name ?? 'Error');
    }
  });
  return response;
}

function send(target: URL, headers: Record<string, string>, body: string, signal: AbortSignal, span: Span | undefined, done: () => void, failedLater: (err: unknown) => void): Promise<PostResponse> {
  return new Promise<PostResponse>((resolve, reject) => {
    const protocol = target.protocol as 'http:' | 'https:';
    const request = (protocol === 'https:' ? https : http).request(target, { method: 'POST', agent: agents[protocol], headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (res: IncomingMessage) => {
      signal.removeEventListener('abort', onRequestAbort);
      span?.setAttribute('http.response.status_code', res.statusCode ?? 0);
      const onAbort = () => res.destroy(abortError(signal) as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      res.once('error', failedLater);
      res.once('close', () => {
        signal.removeEventListener('abort', onAbort);
        done();
      });
      resolve({
        status: res.statusCode ?? 0,
        headers: {
          get: (name) => {
            const value = res.headers[name.toLowerCase()];
            return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
          },
        },
        body: keptAlive(res),
        text: async () => {
          const parts: Buffer[] = [];
          for await (const part of res) parts.push(part as Buffer);
          return Buffer.concat(parts).toString('utf8');
        },
      });
    });
    const onRequestAbort = () => request.destroy(abortError(signal) as Error);
    signal.addEventListener('abort', onRequestAbort, { once: true });
    request.once('error', (err) => {
      signal.removeEventListener('abort', onRequestAbort);
      reject(signal.aborted ? abortError(signal) : err);
    });
    request.end(body);
  });
}

/**
 * The body's bytes as they arrive. Left early (the adapter stops at `data: [DONE]`), a response
 * already received whole is read to its end, so its connection goes back to the pool for the next
 * request (Node closes the connection of a response destroyed before its end); one still arriving
 * is ended, its connection closed.
 */
function keptAlive(res: IncomingMessage): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]: () => {
      const parts = res[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
      return {
        next: () => parts.next(),
        return: async () => {
          if (res.complete) while (!(await parts.next()).done);
          else await parts.return?.();
          return { done: true, value: undefined };
        },
      };
    },
  };
}

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
 * A request that went out on a kept-alive connection the provider had just closed is sent once
 * more, on a new connection (see `resendable` for when, and why no other failure is).
 *
 * Tracing on, each request sent is an HTTP client span (`POST`, the HTTP semantic conventions'
 * client attributes) from the request to the body's end, and sends its own `traceparent`: undici's
 * instrumentation, which traces fetch, never sees node:http, and the http instrumentation cannot
 * patch a bundled module. A request sent again is a second span, as those conventions ask of a
 * resend (`http.request.resend_count: 1`), beside the first, which ends failed with its error.
 */
export interface PostResponse {
  status: number;
  /** A response header (several values joined with ", "), or null; as fetch's `Headers.get`. */
  headers: { get(name: string): string | null };
  /** The body's bytes as they arrive; read once. */
  body: AsyncIterable<Uint8Array>;
  text(): Promise<string>;
}

/**
 * How long a connection may wait idle in the pool. Servers close idle connections after some
 * seconds, without notice: Node's and uvicorn's (vLLM's) after 5 s, load balancers after a minute
 * or so; reused as the server closes it, a connection fails the request sent on it. So the pool
 * closes its own first, sooner than the shortest of those, as OpenAI's SDKs do (4 s in openai-node
 * 4's agentkeepalive, 5 s in openai-python's httpx). With a timeout set, Node also honours a `Keep-Alive: timeout=N`
 * header less 1 s, which it ignores without one. Not a cure: a Lambda environment is frozen
 * between invocations, its timers with it, so a connection idle through a freeze may be taken
 * before its overdue timer fires; the resend covers that. (The same `timeout` is set on a
 * connection in use, where its expiry does nothing: the agent closes only pooled ones.)
 */
const IDLE_TIMEOUT_MS = 4000;

const agents = {
  'http:': new http.Agent({ keepAlive: true, timeout: IDLE_TIMEOUT_MS }),
  'https:': new https.Agent({ keepAlive: true, timeout: IDLE_TIMEOUT_MS }),
};

/** What a request learned of its connection: whether it was a pooled one, and whether any byte of an answer came on it. */
interface Connection {
  reused: boolean;
  answered: boolean;
}

/** How a connection the server closed under a request shows: the reset, a write to it, or its end before an answer ("socket hang up", also ECONNRESET). */
const CLOSED_UNDER_US = new Set(['ECONNRESET', 'EPIPE']);

/**
 * Whether a failed request may be sent again. A model request must never be processed twice (it
 * is billed, and a stream's text may already be on its way to a caller), and the client cannot
 * tell a server that closed an idle connection as the request arrived from one that took the
 * request and then died. So only the one failure that is almost surely the former is resent, as
 * Node's documentation of `request.reusedSocket` recommends: the connection was a pooled one (the
 * server had it idle, and closes those), it was reset or ended, and no byte of an answer came (a
 * status line alone says the request was taken). Never on a new connection (no idle close there:
 * the server may have the request), never once anything was answered, never when the caller
 * cancelled or the time ran out (the abort is the error then, not a reset).
 */
const resendable = (err: unknown, connection: Connection, signal: AbortSignal) =>
  connection.reused && !connection.answered && !signal.aborted && CLOSED_UNDER_US.has((err as NodeJS.ErrnoException)?.code ?? '');

/**
 * Closes the pool's idle connections (those to every origin: the agents serve the model provider
 * alone), so that the resend opens a new one: the pool hands out its most recently used connection
 * first, so if the server closed that one, it most likely closed those idle longer too.
 */
function closeIdle(agent: http.Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

const abortError = (signal: AbortSignal): unknown => signal.reason ?? Object.assign(new Error('This operation was aborted'), { name: 'AbortError' });

/**
 * `onSent` is told when the request has left: its last byte handed to the connection (after the
 * connection was had and the headers and body were written), where a reply's `latency_ms.model`
 * starts; a resend tells it again.
 */
export async function post(url: string, headers: Record<string, string>, body: string, signal: AbortSignal, onSent?: () => void): Promise<PostResponse> {
  const target = new URL(url);
  if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new TypeError(`Only http and https URLs can be asked, got ${target.protocol}`);
  if (signal.aborted) throw abortError(signal);
  const connection: Connection = { reused: false, answered: false };
  try {
    return await attempt(target, headers, body, signal, connection, onSent);
  } catch (err) {
    if (!resendable(err, connection, signal)) throw err;
    closeIdle(agents[target.protocol]);
    return attempt(target, headers, body, signal, { reused: false, answered: false }, onSent, 1);
  }
}

/** One request sent, in its span. */
function attempt(target: URL, headers: Record<string, string>, body: string, signal: AbortSignal, connection: Connection, onSent: (() => void) | undefined, resendCount = 0): Promise<PostResponse> {
  const port = Number(target.port) || (target.protocol === 'https:' ? 443 : 80);
  const attributes = {
    'http.request.method': 'POST',
    'server.address': target.hostname,
    'server.port': port,
    'url.full': `${target.origin}${target.pathname}`,
    ...(resendCount ? { 'http.request.resend_count': resendCount } : {}),
  };
  // The span ends with the body (read, failed or abandoned), not with the answer's headers.
  let settled!: () => void;
  let spanError: unknown;
  const bodyDone = new Promise<void>((resolve) => (settled = resolve));
  let answered!: (response: PostResponse) => void;
  let failed!: (err: unknown) => void;
  const response = new Promise<PostResponse>((resolve, reject) => ((answered = resolve), (failed = reject)));
  void inSpan('POST', { kind: SpanKind.CLIENT, attributes, recordErrors: false }, async (span) => {
    send(target, withTraceHeaders(headers), body, signal, connection, span, settled, (err) => (spanError = err), onSent).then(answered, (err: unknown) => {
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

function send(target: URL, headers: Record<string, string>, body: string, signal: AbortSignal, connection: Connection, span: Span | undefined, done: () => void, failedLater: (err: unknown) => void, onSent?: () => void): Promise<PostResponse> {
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
    connection.reused = request.reusedSocket;
    request.once('socket', (socket) => socket.once('data', () => (connection.answered = true)));
    const onRequestAbort = () => request.destroy(abortError(signal) as Error);
    signal.addEventListener('abort', onRequestAbort, { once: true });
    request.once('error', (err) => {
      signal.removeEventListener('abort', onRequestAbort);
      reject(signal.aborted ? abortError(signal) : err);
    });
    request.end(body, onSent);
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

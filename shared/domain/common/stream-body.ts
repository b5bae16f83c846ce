import { AppError } from '../../errors';
import { logger } from '../../logger';
import { header } from './header';

/**
 * A response body produced while the client reads it (server-sent events), returned by an
 * operation's function instead of envelope data. Like RawBody (raw-body.ts) it is declared below
 * HTTP so that areas can build it; the success-envelope middleware answers it with
 * `text/event-stream`, the local runtime writes each chunk as it comes (shared/local/http-server.ts)
 * and, deployed, Lambda response streaming does (shared/http/streaming.ts).
 *
 * `whenDone` hooks run after the last chunk is produced and before the stream ends (an idempotent
 * request stores its plain answer there), given the plain answer the stream stands for.
 */

const STREAM = Symbol.for('voice-agent-platform.stream-body');

/** The plain (non-streamed) answer a finished stream stands for: the success or error envelope. */
export interface PlainAnswer {
  statusCode: number;
  body: string;
  /** The body's type when it is not JSON (the OpenAI-compatible stream's plain answer is its own events, which the SDK reads on a replay). */
  contentType?: string;
}

export interface StreamBody {
  readonly [STREAM]: true;
  readonly contentType: string;
  /** The text chunks, in order, as they are produced. */
  readonly chunks: AsyncIterable<string>;
  /** Runs `hook` once the stream's content is complete, before it ends. */
  whenDone(hook: (plain: PlainAnswer) => Promise<void> | void): void;
}

/**
 * Marks an invocation whose response can stream: the streaming REST API's `streamHandler`
 * (shared/http/streaming.ts) and the local runtime's server. Any other invocation (the HTTP API,
 * which buffers; a direct invoke) answers a stream as the whole text once it ends
 * (shared/http/middleware/buffer-stream.ts), since a Lambda proxy response's body is a string.
 */
const STREAMS = Symbol.for('voice-agent-platform.invocation-streams');

/** Marks `context` as an invocation that writes stream bodies as they are produced. */
export function streamingInvocation<T extends object>(context: T): T {
  (context as Record<symbol, unknown>)[STREAMS] = true;
  return context;
}

/** Whether the invocation writes stream bodies as they are produced (see streamingInvocation). */
export const invocationStreams = (context: unknown): boolean => typeof context === 'object' && context !== null && (context as Record<symbol, unknown>)[STREAMS] === true;

export function isStreamBody(value: unknown): value is StreamBody {
  return typeof value === 'object' && value !== null && STREAM in value;
}

/** Whether the request asks for server-sent events (`Accept: text/event-stream`). */
export function wantsEventStream(event: { headers?: Record<string, string | undefined> }): boolean {
  return /(^|,)\s*text\/event-stream\s*(;|,|$)/i.test(header(event as never, 'accept') ?? '');
}

/** One server-sent event: its name and one JSON `data:` line. */
export const sseFrame = (event: string, data: unknown): string => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;

/** A queue of text chunks read as an async iterable (one reader). */
export class TextChannel implements AsyncIterable<string> {
  private readonly buffered: string[] = [];
  private waiting: ((r: IteratorResult<string>) => void) | undefined;
  private closed = false;

  push(chunk: string): void {
    if (this.closed) return;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w({ value: chunk, done: false });
    } else this.buffered.push(chunk);
  }

  end(): void {
    this.closed = true;
    if (this.waiting) {
      const w = this.waiting;
      this.waiting = undefined;
      w({ value: undefined, done: true });
    }
  }

  [Symbol.asyncIterator](): AsyncIterator<string> {
    return {
      next: () => {
        if (this.buffered.length) return Promise.resolve({ value: this.buffered.shift()!, done: false });
        if (this.closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => (this.waiting = resolve));
      },
    };
  }
}

/** The error envelope of a failure (a typed error's own; anything else a 500 naming the request). */
export function errorEnvelopeOf(err: unknown, requestId?: string): { statusCode: number; envelope: Record<string, unknown> } {
  if (err instanceof AppError) {
    return { statusCode: err.statusCode, envelope: { success: false, message: err.message, error: { code: err.code, message: err.message, details: err.details } } };
  }
  const details = requestId ? { request_id: requestId } : {};
  return { statusCode: 500, envelope: { success: false, message: 'Internal server error', error: { code: 'INTERNAL', message: 'Internal server error', details } } };
}

/**
 * Streams work that may be refused before it starts: `run` gets `start` (call it once nothing can
 * be refused any more) and `send` (one event). Resolves with the StreamBody at `start`; when `run`
 * fails before, rejects with its error (a plain error answer). Once started, `run`'s result is the
 * last event (`completed`), or its failure the `error` event (the error envelope).
 */
export function eventStream<T>(
  run: (start: () => void, send: (event: string, data: unknown) => void) => Promise<T>,
  finish: { completed: (result: T) => { event: string; data: unknown }; successMessage: string; requestId?: string },
): Promise<StreamBody> {
  const channel = new TextChannel();
  const hooks: ((plain: PlainAnswer) => Promise<void> | void)[] = [];
  let started = false;
  let plain: PlainAnswer | undefined;
  return new Promise<StreamBody>((resolve, reject) => {
    const body: StreamBody = {
      [STREAM]: true,
      contentType: 'text/event-stream; charset=utf-8',
      chunks: (async function* () {
        yield* channel;
        for (const hook of hooks) await hook(plain!);
      })(),
      whenDone: (hook) => void hooks.push(hook),
    };
    const start = () => {
      if (started) return;
      started = true;
      resolve(body);
    };
    const send = (event: string, data: unknown) => {
      if (started) channel.push(sseFrame(event, data));
    };
    run(start, send).then(
      (result) => {
        const last = finish.completed(result);
        plain = { statusCode: 200, body: JSON.stringify({ success: true, message: finish.successMessage, data: last.data }) };
        start();
        channel.push(sseFrame(last.event, last.data));
        channel.end();
      },
      (err: unknown) => {
        if (!started) return reject(err);
        const { statusCode, envelope } = errorEnvelopeOf(err, finish.requestId);
        if (statusCode >= 500) logger.error('A streamed request failed after its stream began', { request_id: finish.requestId, error: err as Error });
        plain = { statusCode, body: JSON.stringify(envelope) };
        channel.push(sseFrame('error', envelope));
        channel.end();
      },
    );
  });
}

/** A StreamBody over chunks produced elsewhere (the OpenAI-compatible stream); `plain` is what its hooks get. */
export function streamBodyOf(chunks: AsyncIterable<string>, contentType: string, plain: () => PlainAnswer): StreamBody {
  const hooks: ((plain: PlainAnswer) => Promise<void> | void)[] = [];
  return {
    [STREAM]: true,
    contentType,
    chunks: (async function* () {
      yield* chunks;
      for (const hook of hooks) await hook(plain());
    })(),
    whenDone: (hook) => void hooks.push(hook),
  };
}

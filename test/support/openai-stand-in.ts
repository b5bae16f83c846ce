import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { readBody } from './stand-in';

/**
 * A stand-in OpenAI-compatible Chat Completions server on 127.0.0.1 for tests: it records every
 * request and answers `POST /v1/chat/completions` from a script, a queue of answers used in
 * order (text, tool calls, an HTTP error with its headers, a raw body, a delay, or no answer at
 * all). With the queue empty it answers `fallback` (default: the text "ok"). It checks the key
 * (`Authorization: Bearer <apiKey>`, else 401 quoting the given key masked, as OpenAI does) only
 * when started with an `apiKey`, and refuses a request over `contextTokens` (400
 * `context_length_exceeded`) only when started with one. Shapes are the
 * documented ones: the completion object (`choices[0].message.content` / `tool_calls`,
 * `finish_reason`, `usage`) and the error JSON (`{ error: { message, type, param, code } }`).
 * A request with `stream: true` is answered as OpenAI streams (server-sent `data:` lines of
 * `chat.completion.chunk`s: the role first, the text in pieces, each tool call in fragments by
 * `index` (id, type and name in the first, the arguments in two parts), a chunk with the
 * `finish_reason` and an empty delta, a `usage` chunk with empty `choices` only when
 * `stream_options.include_usage`, then `data: [DONE]`). A request whose client closes the
 * connection before its answer ended is marked `abortedAt` (a cancelled request).
 *
 * Kept-alive connections stay open (Node's default: closed after 5 s idle, announced in a
 * `Keep-Alive: timeout=5` header) unless started with `idleCloseMs`: then, as a provider's servers
 * and load balancers do, a connection on which no request came that long after its last answer
 * ended is closed, unannounced. The race this makes (a client sends its next request on the
 * connection just as the server closes it) is reproduced on demand: a request sent in the same
 * turn of the event loop as `idleClosed()` resolves goes out on the closed connection before the
 * client can learn of the close, and a `{ drop: true }` step closes the connection as its request
 * arrives, unanswered.
 *
 *   const model = await startOpenAiStandIn();
 *   model.script({ toolCalls: [{ name: 'lookup', arguments: { id: 1 } }] }, { text: 'Found it.' });
 *   process.env.LLM_BASE_URL = model.url; // …/v1
 */

export interface StandInToolCall {
  /** Default `call_standin_<n>`, counting every call the stand-in made. */
  id?: string;
  name: string;
  /** JSON text, or an object sent as its JSON text. */
  arguments?: string | Record<string, unknown>;
}

export type StandInAnswer =
  /** A completion: text and/or tool calls. */
  | {
      text?: string | null;
      toolCalls?: StandInToolCall[];
      usage?: { prompt_tokens: number; completion_tokens: number } | null;
      finishReason?: string;
      /** Waits this long before answering. */
      delayMs?: number;
      /** Streamed (`stream: true`): the text in these pieces (default: word by word). */
      pieces?: string[];
      /** Streamed: sends the first piece, then waits for this before sending the rest. */
      holdUntil?: Promise<unknown>;
      /** Streamed: after this many text pieces the connection is cut (no finish, no [DONE]). */
      cutAfter?: number;
    }
  /** An HTTP error with the documented error JSON (or `body`: text as it is, anything else as JSON); `retryAfter` is the Retry-After header. */
  | { status: number; message?: string; type?: string; code?: string | null; retryAfter?: string; headers?: Record<string, string>; body?: unknown; delayMs?: number }
  /** Any body (a malformed answer). */
  | { raw: string; status?: number; contentType?: string; delayMs?: number }
  /** Never answers (a timeout); the connection is dropped on close(). */
  | { hang: true }
  /** Reads the request whole, writes these bytes (the start of an answer, e.g. a status line) and closes the connection. */
  | { partial: string };

/**
 * An answer, or a function of the request's JSON body that gives one; or `{ drop: true }`: the
 * connection is closed as the request arrives, its body unread and unanswered (the request is
 * recorded without a body), which to the client is a server that closed an idle connection at
 * that very moment.
 */
export type StandInStep = StandInAnswer | ((body: any) => StandInAnswer) | { drop: true };

export interface StandInRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  authorization: string | undefined;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  body: any;
  /** When (Date.now()) the client closed the request's connection before the answer ended (an aborted request); undefined while it runs or once it was answered whole. */
  abortedAt?: number;
  /** The client's end of the connection it came on (`address:port`): requests on a kept-alive connection share it. */
  connection: string;
}

export interface OpenAiStandIn {
  /** The base URL, `http://127.0.0.1:<port>/v1`. */
  url: string;
  /** The key it expects as `Authorization: Bearer <key>`, when it checks one. */
  apiKey: string | undefined;
  /** Every request received, oldest first. */
  requests: StandInRequest[];
  /** Queues answers (after those already queued). */
  script(...steps: StandInStep[]): void;
  /** Forgets the queue and the recorded requests. */
  reset(): void;
  /** Resolves when the stand-in next closes an idle connection (`idleCloseMs`), at that moment: the client has not seen the close yet. */
  idleClosed(): Promise<void>;
  close(): Promise<void>;
}

/**
 * The stand-in's token count of a request: the JSON text of its messages and tools, a token per
 * four characters (a tokenizer's rough rate for English). It is not ours to agree with: the
 * platform estimates on its own, as it must with a real provider.
 */
export const standInTokens = (body: any): number => Math.ceil(JSON.stringify([body?.messages ?? [], body?.tools ?? []]).length / 4);

/** A key as OpenAI quotes a refused one: its first 8 and last 4 characters around stars. */
const masked = (key: string) => (key.length > 12 ? `${key.slice(0, 8)}${'*'.repeat(key.length - 12)}${key.slice(-4)}` : key);

export async function startOpenAiStandIn(options: {
  apiKey?: string;
  fallback?: StandInStep;
  /** The model's context window: a request over it (standInTokens) is refused as OpenAI refuses it (400 `context_length_exceeded`). */
  contextTokens?: number;
  /** Closes a kept-alive connection this long after its last answer ended when no request came on it, without announcing it (no `Keep-Alive` header). */
  idleCloseMs?: number;
} = {}): Promise<OpenAiStandIn> {
  const apiKey = options.apiKey;
  const fallback: StandInStep = options.fallback ?? { text: 'ok' };
  const requests: StandInRequest[] = [];
  const queue: StandInStep[] = [];
  let calls = 0;

  const send = (res: ServerResponse, status: number, body: string, headers: Record<string, string> = {}) => {
    if (res.destroyed || res.writableEnded) return; // the client gave up (a timeout test)
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body);
  };
  const apiError = (status: number, message: string, type: string, code: string | null = null) =>
    JSON.stringify({ error: { message, type, param: null, code } });

  const record = (req: IncomingMessage, body: unknown): StandInRequest => {
    const recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, authorization: req.headers.authorization, body, connection: `${req.socket.remoteAddress}:${req.socket.remotePort}` };
    requests.push(recorded);
    return recorded;
  };

  const server = createServer(async (req, res) => {
    const next = queue[0];
    if (typeof next === 'object' && 'drop' in next) {
      queue.shift();
      record(req, undefined);
      return void req.socket.destroy();
    }
    const text = await readBody(req);
    let body: unknown;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const recorded = record(req, body);
    // The client gave up on the request (its fetch aborted): the response closes before it ended.
    res.on('close', () => void (res.writableFinished || (recorded.abortedAt = Date.now())));
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') return send(res, 404, apiError(404, 'Unknown path', 'invalid_request_error'));
    if (apiKey !== undefined && req.headers.authorization !== `Bearer ${apiKey}`) {
      const given = (req.headers.authorization ?? '').replace(/^Bearer\s+/i, '');
      return send(res, 401, apiError(401, `Incorrect API key provided: ${masked(given)}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', 'invalid_api_key'));
    }
    if (options.contextTokens !== undefined && standInTokens(body) > options.contextTokens) {
      const tokens = standInTokens(body);
      return send(res, 400, JSON.stringify({ error: { message: `This model's maximum context length is ${options.contextTokens} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' } }));
    }
    const step = queue.shift() ?? fallback;
    const answer = typeof step === 'function' ? step(body) : step;
    if ('hang' in answer) return;
    if ('drop' in answer) return void req.socket.destroy();
    if ('partial' in answer) return void req.socket.end(answer.partial);
    if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
    if ('raw' in answer) return send(res, answer.status ?? 200, answer.raw, { 'content-type': answer.contentType ?? 'application/json' });
    if ('status' in answer) {
      const type = answer.type ?? (answer.status === 429 ? 'rate_limit_exceeded' : answer.status >= 500 ? 'server_error' : 'invalid_request_error');
      const body = answer.body === undefined ? apiError(answer.status, answer.message ?? 'scripted failure', type, answer.code ?? null) : typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
      return send(res, answer.status, body, { ...(answer.retryAfter ? { 'retry-after': answer.retryAfter } : {}), ...answer.headers });
    }
    const toolCalls = (answer.toolCalls ?? []).map((c) => ({
      id: c.id ?? `call_standin_${++calls}`,
      type: 'function',
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments ?? {}) },
    }));
    if ((body as { stream?: unknown } | undefined)?.stream === true) return streamAnswer(res, body as any, answer, toolCalls, requests.length);
    const completion = {
      id: `chatcmpl-${requests.length}`,
      object: 'chat.completion',
      created: 1_700_000_000,
      model: (body as { model?: string } | undefined)?.model ?? 'gpt-4o-mini',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: answer.text ?? null, refusal: null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) },
          logprobs: null,
          finish_reason: answer.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop'),
        },
      ],
      ...(answer.usage === null
        ? {}
        : { usage: { ...(answer.usage ?? { prompt_tokens: 11, completion_tokens: 7 }), total_tokens: (answer.usage?.prompt_tokens ?? 11) + (answer.usage?.completion_tokens ?? 7) } }),
    };
    send(res, 200, JSON.stringify(completion));
  });
  const idleWaiters: (() => void)[] = [];
  if (options.idleCloseMs !== undefined) {
    const idleMs = options.idleCloseMs;
    // Only our timer closes idle connections, and no `Keep-Alive: timeout` header announces it.
    server.keepAliveTimeout = 0;
    const timers = new WeakMap<Socket, NodeJS.Timeout>();
    const closeIdle = (socket: Socket) => {
      socket.destroy();
      for (const resolve of idleWaiters.splice(0)) resolve();
    };
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      clearTimeout(timers.get(req.socket));
      res.once('finish', () => timers.set(req.socket, setTimeout(closeIdle, idleMs, req.socket).unref()));
    });
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    apiKey,
    requests,
    script: (...steps) => void queue.push(...steps),
    reset: () => {
      queue.length = 0;
      requests.length = 0;
    },
    idleClosed: () => new Promise<void>((resolve) => void idleWaiters.push(resolve)),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

type ScriptedCompletion = Extract<StandInAnswer, { text?: string | null }>;

/** A completion streamed as OpenAI streams it (see the module comment). */
async function streamAnswer(
  res: ServerResponse,
  body: { model?: string; stream_options?: { include_usage?: boolean } },
  answer: ScriptedCompletion,
  toolCalls: { id: string; type: string; function: { name: string; arguments: string } }[],
  n: number,
): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
  const base = { id: `chatcmpl-${n}`, object: 'chat.completion.chunk', created: 1_700_000_000, model: body.model ?? 'gpt-4o-mini', system_fingerprint: 'fp_standin' };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
  const write = (text: string) => !res.destroyed && res.write(text);
  // A cut connection: what was written reaches the client, then the socket closes without the end.
  const cut = () => new Promise<void>((resolve) => res.write('', () => resolve())).then(() => void res.destroy());
  write(chunk({ role: 'assistant', content: '', refusal: null }));
  const text = answer.text ?? '';
  const pieces = answer.pieces ?? (text.match(/\S+\s*|\s+/g) ?? []);
  for (const [i, piece] of pieces.entries()) {
    if (answer.cutAfter !== undefined && i >= answer.cutAfter) return cut();
    write(chunk({ content: piece }));
    if (i === 0 && answer.holdUntil) await answer.holdUntil;
  }
  if (answer.cutAfter !== undefined) return cut();
  toolCalls.forEach((c, index) => {
    const args = c.function.arguments;
    const half = Math.ceil(args.length / 2);
    write(chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] }));
    write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(0, half) } }] }));
    write(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
  });
  write(chunk({}, answer.finishReason ?? (toolCalls.length ? 'tool_calls' : 'stop')));
  if (body.stream_options?.include_usage && answer.usage !== null) {
    const usage = answer.usage ?? { prompt_tokens: 11, completion_tokens: 7 };
    write(`data: ${JSON.stringify({ ...base, choices: [], usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } })}\n\n`);
  }
  write('data: [DONE]\n\n');
  res.end();
}

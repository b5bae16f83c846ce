/**
 * The typed client of the Voice AI Agent Platform API: openapi-fetch over the types that
 * openapi-typescript generates from docs/openapi.json (./schema.ts), and a thin layer for what
 * every caller needs: the API key, typed errors, cursor paging, idempotency keys, retries.
 */
import createFetchClient, { mergeHeaders, type Client, type HeadersOptions, type MaybeOptionalInit, type Middleware } from 'openapi-fetch';
import { ApiError } from './errors.js';
import { retryingFetch, type RetryOptions } from './retry.js';
import { streamTurn, type ChatStreamEvent } from './stream.js';
import type { ListMeta, paths } from './schema.js';

export type * from './schema.js';
export { ApiError, parseRetryAfter, type ErrorBody, type ErrorCode, type ErrorDetails } from './errors.js';
export { isRetryable, retryDelay, type RetryInfo, type RetryOptions } from './retry.js';
export { readChatStream, type ChatStreamEvent } from './stream.js';
export { verifyWebhook, WebhookVerificationError, type WebhookEvent, type WebhookHeaders } from './webhooks.js';

export interface ClientConfig {
  /** Where the API is: `http://localhost:3000` locally, the stack's API URL deployed (paths carry `/api/v1`). */
  baseUrl: string;
  /**
   * Where streamed turns (`chats.streamMessage`, `chats.streamToolResults`) are sent: deployed, the
   * stack's `StreamingApiUrl` output, whose REST API streams each event as it is produced (the HTTP
   * API at `baseUrl` answers the same events only once the turn ends). Default `baseUrl` (locally
   * one server streams).
   */
  streamUrl?: string;
  /** Sent as `X-Api-Key`; leave it out for the public operations only (health, widget config). */
  apiKey?: string;
  /** Retries of 429 and 503 answers; `false` turns them off. */
  retry?: RetryOptions | false;
  /** Headers sent on every request. */
  headers?: HeadersOptions;
  /** The fetch to use (default `globalThis.fetch`). */
  fetch?: (request: Request) => Promise<Response>;
}

type Method = 'get' | 'put' | 'post' | 'patch' | 'delete';
type Operation<P extends keyof paths, M extends Method> = paths[P][M];

/** The paths that have an operation for `M`. */
export type PathsWith<M extends Method> = { [P in keyof paths]: paths[P][M] extends { responses: unknown } ? P : never }[keyof paths];

/** The JSON body of an operation's 200 answer: the success envelope. */
export type SuccessEnvelope<P extends keyof paths, M extends Method> =
  Operation<P, M> extends { responses: { 200: { content: { 'application/json': infer J } } } } ? J : undefined;

/** The envelope's `data`: what the convenience methods resolve to (undefined for deletions). */
export type ResponseData<P extends keyof paths, M extends Method> = SuccessEnvelope<P, M> extends { data: infer D } ? D : undefined;

/** The GET paths that page by `cursor`. */
export type ListPath = {
  [P in PathsWith<'get'>]: Operation<P, 'get'> extends { parameters: { query?: infer Q } }
    ? [NonNullable<Q>] extends [never] ? never : 'cursor' extends keyof NonNullable<Q> ? P : never
    : never;
}[PathsWith<'get'>];

/** One item of a list's `data`. */
export type ListItem<P extends ListPath> = ResponseData<P, 'get'> extends (infer I)[] ? I : never;

/** One page of a list: its items and `meta` (`total`, `limit`, `offset`, `next_cursor`). */
export interface Page<I> {
  data: I[];
  meta: ListMeta;
}

/** openapi-fetch's options for the operation (`params`, `body`, `headers`, `signal`…), plus ours. */
export type RequestOptions<P extends keyof paths, M extends Method> = NonNullable<MaybeOptionalInit<paths[P], M>> &
  (M extends 'post' ? { /** Sent as `Idempotency-Key`: a repeat within 24 h replays the first answer. */ idempotencyKey?: string } : unknown);

type Args<P extends keyof paths, M extends Method> =
  undefined extends MaybeOptionalInit<paths[P], M> ? [options?: RequestOptions<P, M>] : [options: RequestOptions<P, M>];

/**
 * openapi-fetch's typed client (`GET`, `POST`, … answering `{ data, response }` with `data` the
 * whole envelope) and the convenience methods (`get`, `post`, … resolving to the envelope's `data`).
 * Both throw `ApiError` for any answer outside 2xx and retry 429/503 as configured.
 */
export interface PlatformClient extends Client<paths, 'application/json'> {
  get<P extends PathsWith<'get'>>(path: P, ...options: Args<P, 'get'>): Promise<ResponseData<P, 'get'>>;
  post<P extends PathsWith<'post'>>(path: P, ...options: Args<P, 'post'>): Promise<ResponseData<P, 'post'>>;
  put<P extends PathsWith<'put'>>(path: P, ...options: Args<P, 'put'>): Promise<ResponseData<P, 'put'>>;
  patch<P extends PathsWith<'patch'>>(path: P, ...options: Args<P, 'patch'>): Promise<ResponseData<P, 'patch'>>;
  delete<P extends PathsWith<'delete'>>(path: P, ...options: Args<P, 'delete'>): Promise<ResponseData<P, 'delete'>>;
  /** One page of a list, with its `meta`. */
  page<P extends ListPath>(path: P, ...options: Args<P, 'get'>): Promise<Page<ListItem<P>>>;
  /** Every item of a list, page after page by `meta.next_cursor` (the first page may start at an `offset`). */
  paginate<P extends ListPath>(path: P, ...options: Args<P, 'get'>): AsyncIterableIterator<ListItem<P>>;
  /** Chat turns as server-sent events (`Accept: text/event-stream`): the reply as it is written. */
  chats: {
    /** `POST /chats/{id}/messages`, streamed: iterate the events; a refusal before the turn throws ApiError. */
    streamMessage(chatId: string, body: { content: string }, options?: { signal?: AbortSignal; idempotencyKey?: string }): Promise<AsyncIterableIterator<ChatStreamEvent>>;
    /** `POST /chats/{id}/tool-results`, streamed. */
    streamToolResults(chatId: string, body: { results: { tool_call_id: string; output: unknown }[] }, options?: { signal?: AbortSignal; idempotencyKey?: string }): Promise<AsyncIterableIterator<ChatStreamEvent>>;
  };
}

/** Creates a client. */
export function createClient(config: ClientConfig): PlatformClient {
  const baseFetch = config.fetch ?? ((request: Request) => globalThis.fetch(request));
  const raw = createFetchClient<paths, 'application/json'>({
    baseUrl: config.baseUrl,
    headers: mergeHeaders(config.headers, config.apiKey ? { 'X-Api-Key': config.apiKey } : {}),
    fetch: retryingFetch(baseFetch, config.retry ?? {}),
  });
  raw.use(throwApiErrors);

  const envelope = async (method: string, path: string, options: Record<string, unknown> = {}) => {
    const { idempotencyKey, headers, ...init } = options as { idempotencyKey?: string; headers?: HeadersOptions };
    const merged = idempotencyKey === undefined ? headers : mergeHeaders(headers, { 'Idempotency-Key': idempotencyKey });
    const { data } = await (raw.request as (m: string, p: string, i: object) => Promise<{ data?: unknown }>)(method, path, { ...init, headers: merged });
    return data as { data?: unknown; meta?: ListMeta } | undefined;
  };
  const call = (method: string) => async (path: string, options?: Record<string, unknown>) => (await envelope(method, path, options))?.data;
  const page = async (path: string, options?: Record<string, unknown>) => {
    const answer = await envelope('get', path, options);
    if (!answer || !Array.isArray(answer.data) || !answer.meta) throw new TypeError(`${path} did not answer a list`);
    return { data: answer.data, meta: answer.meta };
  };
  async function* paginate(path: string, options: { params?: { query?: Record<string, unknown> } } = {}) {
    let query: Record<string, unknown> = { ...options.params?.query };
    for (;;) {
      const { data, meta } = await page(path, { ...options, params: { ...options.params, query } });
      yield* data;
      if (!meta.next_cursor || data.length === 0) return;
      // The cursor carries the position; an offset only ever applies to the first page.
      const { offset: _offset, ...rest } = query;
      query = { ...rest, cursor: meta.next_cursor };
    }
  }

  const streamFetch = retryingFetch(baseFetch, config.retry ?? {});
  const stream = (what: string) => (chatId: string, body: unknown, options: { signal?: AbortSignal; idempotencyKey?: string } = {}) => {
    const headers = new Headers(mergeHeaders(config.headers, config.apiKey ? { 'X-Api-Key': config.apiKey } : {}, options.idempotencyKey ? { 'Idempotency-Key': options.idempotencyKey } : {}));
    return streamTurn(streamFetch, `${(config.streamUrl ?? config.baseUrl).replace(/\/+$/, '')}/api/v1/chats/${encodeURIComponent(chatId)}/${what}`, headers, body, options.signal);
  };

  return Object.assign(raw, {
    chats: { streamMessage: stream('messages'), streamToolResults: stream('tool-results') },
    get: call('get'),
    post: call('post'),
    put: call('put'),
    patch: call('patch'),
    delete: call('delete'),
    page,
    paginate,
  }) as unknown as PlatformClient;
}

/** Turns every answer outside 2xx into an ApiError, so callers get data or a typed error. */
const throwApiErrors: Middleware = {
  async onResponse({ request, response }) {
    if (!response.ok) throw await ApiError.from(request, response);
    return undefined;
  },
};

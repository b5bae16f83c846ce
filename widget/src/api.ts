/** The widget's calls to the public API: the envelope unwrapped, failures as `ApiError`. */

export class ApiError extends Error {
  constructor(
    /** HTTP status; 0 when the request never got an answer (network, CORS). */
    readonly status: number,
    message: string,
    /** Seconds to wait (Retry-After) on 429 and 503. */
    readonly retryAfter?: number,
    /** The error envelope's `details` (`reason`, `limit`, `status`…), when the page could read it. */
    readonly details: { reason?: string; limit?: string; status?: string } = {},
  ) {
    super(message);
  }
}

export interface PendingToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface Message {
  id: string;
  role: 'user' | 'agent' | 'tool_call' | 'tool_result';
  content: string;
  sources?: { doc_id: string; url: string | null; score: number }[];
}

export interface ChatState {
  id: string;
  status: 'active' | 'requires_action' | 'ended';
  end_reason: string | null;
  pending_tool_calls: PendingToolCall[];
}

export interface Chat extends ChatState {
  messages: Message[];
  token?: string;
}

export interface Turn {
  chat: ChatState;
  messages: Message[];
}

export interface WidgetConfig {
  id: string;
  title: string;
  greeting: string;
  placeholder: string;
  primary_color: string;
  position: 'bottom-right' | 'bottom-left';
  avatar_url: string;
  language: string;
  /** Show the call button (call.ts). */
  voice_enabled?: boolean;
  /** Where turns stream (deployed: the streaming REST API, same paths); null: here. */
  stream_base_url?: string | null;
  agent: { id: string; agent_name: string; begin_message: string; start_speaker: string } | null;
}

/** What a streamed turn tells as it happens: a piece of an agent message's text, then the message whole. */
export interface TurnListener {
  delta(messageId: string, text: string): void;
  completed(message: Message): void;
}

/** The HTTP status an `error` event's envelope stands for (the codes of shared/errors.ts). */
const STATUS: Record<string, number> = { UNAVAILABLE: 503, BAD_GATEWAY: 502, RATE_LIMITED: 429, CONFLICT: 409, NOT_FOUND: 404, UNPROCESSABLE: 422, UNAUTHORIZED: 401 };

/**
 * Reads a turn's server-sent events (docs/api.md, "Streaming a turn"): `message.delta` and
 * `message.completed` go to `listen`; `turn.completed` is the answer; `error` (the envelope) is
 * thrown as the plain answer's ApiError would be; a stream cut before either is a network error.
 */
async function readTurn(body: ReadableStream<Uint8Array>, listen: TurnListener): Promise<Turn> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let name = '';
  let data = '';
  for (;;) {
    let chunk: Awaited<ReturnType<typeof reader.read>>;
    try {
      chunk = await reader.read();
    } catch (err) {
      throw new ApiError(0, String((err as Error)?.message ?? err));
    }
    if (chunk.done) throw new ApiError(0, 'The answer ended early');
    buffer += decoder.decode(chunk.value, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, '');
      buffer = buffer.slice(nl + 1);
      if (line.startsWith('event:')) name = line.slice(6).trim();
      else if (line.startsWith('data:')) data += line.slice(5).replace(/^ /, '');
      else if (!line && data) {
        const value = JSON.parse(data);
        const event = name;
        name = data = '';
        if (event === 'message.delta') listen.delta(value.message_id, value.delta);
        else if (event === 'message.completed') listen.completed(value);
        else if (event === 'turn.completed') return value as Turn;
        else if (event === 'error') {
          const e = value?.error ?? {};
          throw new ApiError(STATUS[e.code] ?? 500, e.message ?? 'The turn failed', e.details?.retry_after_seconds, e.details ?? {});
        }
      }
    }
  }
}

/** How long turns avoid a streaming URL that could not be reached before trying it again. */
export const STREAM_RETRY_MS = 30_000;

/** A client of one widget's public endpoints; `base` ends with `/api/v1`. */
/**
 * This browser's visitor id, kept in localStorage across visits: a traffic split between agent
 * versions sticks to it, so a returning visitor meets the same version. None when storage is off.
 */
function visitorId(): string | undefined {
  try {
    const store = (globalThis as unknown as { localStorage: { getItem(k: string): string | null; setItem(k: string, v: string): void } }).localStorage;
    let id = store.getItem('voice-agent-widget:visitor');
    if (!id || !/^[A-Za-z0-9_-]{8,64}$/.test(id)) store.setItem('voice-agent-widget:visitor', (id = crypto.randomUUID()));
    return id;
  } catch {
    return undefined;
  }
}

export function client(base: string, widgetId: string) {
  const at = (b: string) => `${b}/widget/${encodeURIComponent(widgetId)}`;
  const root = at(base);
  /** Where turns stream (the config's `stream_base_url`, once read). */
  let turns = root;
  /** Until when turns go to the API itself: the streaming URL could not be reached (then it is tried again). */
  let streamingDownUntil = 0;
  async function call<T>(method: string, path: string, body?: unknown, token?: string, listen?: TurnListener): Promise<T> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token) headers.authorization = `Bearer ${token}`;
    // A turn asks for server-sent events; a server that does not stream answers the plain envelope.
    if (listen) headers.accept = 'text/event-stream, application/json';
    let res: Response;
    const init: RequestInit = { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', mode: 'cors' };
    const streaming = !!listen && turns !== root && Date.now() >= streamingDownUntil;
    try {
      res = await fetch((streaming ? turns : root) + path, init);
    } catch (err) {
      if (!streaming) throw new ApiError(0, String((err as Error)?.message ?? err));
      // The streaming API unreachable from here: this turn asks the API itself, which answers the
      // same events all at once; the streaming URL is tried again after STREAM_RETRY_MS, so one
      // failure does not pin the page to the buffered path.
      streamingDownUntil = Date.now() + STREAM_RETRY_MS;
      return call<T>(method, path, body, token, listen);
    }
    if (listen && res.ok && /^text\/event-stream/i.test(res.headers.get('content-type') ?? '') && res.body) return (await readTurn(res.body, listen)) as T;
    let json: { data?: T; error?: { message?: string; details?: { retry_after_seconds?: number; reason?: string; limit?: string; status?: string } } } | undefined;
    try {
      json = (await res.json()) as typeof json;
    } catch {
      json = undefined;
    }
    if (!res.ok) {
      const header = Number(res.headers.get('retry-after'));
      const retry = header > 0 ? header : json?.error?.details?.retry_after_seconds;
      throw new ApiError(res.status, json?.error?.message ?? `HTTP ${res.status}`, retry, json?.error?.details ?? {});
    }
    return json?.data as T;
  }
  return {
    config: async () => {
      const config = await call<WidgetConfig>('GET', '/config');
      if (config?.stream_base_url && /^https:\/\//.test(config.stream_base_url)) turns = at(config.stream_base_url.replace(/\/+$/, ''));
      return config;
    },
    start: () => call<Chat & { token: string }>('POST', '/chats', { visitor_id: visitorId() }),
    get: (id: string, token: string) => call<Chat>('GET', `/chats/${id}`, undefined, token),
    send: (id: string, token: string, content: string, listen?: TurnListener) => call<Turn>('POST', `/chats/${id}/messages`, { content }, token, listen),
    toolResults: (id: string, token: string, results: { tool_call_id: string; output: unknown }[], listen?: TurnListener) =>
      call<Turn>('POST', `/chats/${id}/tool-results`, { results }, token, listen),
    end: (id: string, token: string) => call<Chat>('POST', `/chats/${id}/end`, undefined, token),
    /** A web call (call.ts): its id, the voice runtime's WebSocket and a one-use token. */
    startCall: () => call<{ call_id: string; url: string; token: string }>('POST', '/calls', { visitor_id: visitorId() }),
  };
}

export type Client = ReturnType<typeof client>;

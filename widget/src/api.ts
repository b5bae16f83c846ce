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
  agent: { id: string; agent_name: string; begin_message: string; start_speaker: string } | null;
}

/** A client of one widget's public endpoints; `base` ends with `/api/v1`. */
export function client(base: string, widgetId: string) {
  const root = `${base}/widget/${encodeURIComponent(widgetId)}`;
  async function call<T>(method: string, path: string, body?: unknown, token?: string): Promise<T> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (token) headers.authorization = `Bearer ${token}`;
    let res: Response;
    try {
      res = await fetch(root + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit', mode: 'cors' });
    } catch (err) {
      throw new ApiError(0, String((err as Error)?.message ?? err));
    }
    let json: { data?: T; error?: { message?: string; details?: { retry_after_seconds?: number; reason?: string; limit?: string; status?: string } } } | undefined;
    try {
      json = await res.json();
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
    config: () => call<WidgetConfig>('GET', '/config'),
    start: () => call<Chat & { token: string }>('POST', '/chats', {}),
    get: (id: string, token: string) => call<Chat>('GET', `/chats/${id}`, undefined, token),
    send: (id: string, token: string, content: string) => call<Turn>('POST', `/chats/${id}/messages`, { content }, token),
    toolResults: (id: string, token: string, results: { tool_call_id: string; output: unknown }[]) =>
      call<Turn>('POST', `/chats/${id}/tool-results`, { results }, token),
    end: (id: string, token: string) => call<Chat>('POST', `/chats/${id}/end`, undefined, token),
  };
}

export type Client = ReturnType<typeof client>;

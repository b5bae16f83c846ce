import { ApiError } from './errors.js';
import type { components } from './schema.js';

type ChatMessage = components['schemas']['ChatMessage'];
type ChatTurn = components['schemas']['ChatTurn'];

/**
 * One event of a streamed chat turn (docs/api.md, "Streaming a turn"): `message.delta` as the
 * agent's reply is written, `tool_call` / `tool_result` as tools run, `message.completed` with the
 * agent's whole message, then `turn.completed` with what the plain answer's `data` would be — or
 * `error` (the error envelope) when the turn failed after the stream began.
 */
export type ChatStreamEvent =
  | { event: 'message.delta'; data: { message_id: string; delta: string } }
  | { event: 'tool_call' | 'tool_result' | 'message.completed'; data: ChatMessage }
  | { event: 'turn.completed'; data: ChatTurn }
  | { event: 'error'; data: components['schemas']['ErrorEnvelope'] };

/** The events of a `text/event-stream` answer, parsed as they arrive. */
export async function* readChatStream(response: Response): AsyncGenerator<ChatStreamEvent> {
  if (!response.body) return;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let name = 'message';
  let data: string[] = [];
  const take = (line: string): ChatStreamEvent | undefined => {
    if (line === '') {
      const out = data.length ? ({ event: name, data: JSON.parse(data.join('\n')) } as ChatStreamEvent) : undefined;
      name = 'message';
      data = [];
      return out;
    }
    if (line.startsWith('event:')) name = line.slice(6).trim();
    else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    return undefined;
  };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const event = take(buffer.slice(0, nl).replace(/\r$/, ''));
        buffer = buffer.slice(nl + 1);
        if (event) yield event;
      }
      if (done) {
        const last = take('');
        if (last) yield last;
        return;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * Posts a turn asking for server-sent events; a refusal before the turn (400, 401, 404, 409, 429)
 * throws ApiError as every other call does.
 */
export async function streamTurn(fetcher: (request: Request) => Promise<Response>, url: string, headers: Headers, body: unknown, signal?: AbortSignal): Promise<AsyncGenerator<ChatStreamEvent>> {
  headers.set('accept', 'text/event-stream');
  headers.set('content-type', 'application/json');
  const request = new Request(url, { method: 'POST', headers, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
  const response = await fetcher(request.clone());
  if (!response.ok) throw await ApiError.from(request, response);
  return readChatStream(response);
}

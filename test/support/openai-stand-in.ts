import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBody } from './stand-in';

/** One scripted answer: a reply (text and/or tool calls), or an HTTP failure, after an optional delay. */
export type StandInReply =
  | { text?: string; toolCalls?: { name: string; arguments: Record<string, unknown> | string; id?: string }[]; usage?: { prompt_tokens: number; completion_tokens: number }; delayMs?: number }
  | { status: number; body?: unknown; retryAfter?: string; delayMs?: number };

export interface OpenAiStandIn {
  /** Base URL, `http://127.0.0.1:<port>/v1`. */
  url: string;
  /** Every request body received, parsed, with its authorization header. */
  requests: { body: any; authorization: string | undefined }[];
  /** Queues answers, one per request; with none left it answers `{ text: 'ok' }`. */
  script(...replies: StandInReply[]): void;
  close(): Promise<void>;
}

/** An OpenAI-compatible Chat Completions server on loopback that answers from a script (tests only). */
export async function startOpenAiStandIn(): Promise<OpenAiStandIn> {
  const requests: OpenAiStandIn['requests'] = [];
  const queue: StandInReply[] = [];
  let n = 0;
  const server: Server = createServer(async (req, res) => {
    const raw = await readBody(req);
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    requests.push({ body: JSON.parse(raw), authorization: req.headers.authorization });
    const reply = queue.shift() ?? { text: 'ok' };
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if ('status' in reply) {
      res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.retryAfter ? { 'retry-after': reply.retryAfter } : {}) });
      res.end(JSON.stringify(reply.body ?? { error: { message: 'scripted failure' } }));
      return;
    }
    const toolCalls = (reply.toolCalls ?? []).map((c) => ({
      id: c.id ?? `call_standin_${++n}`,
      type: 'function',
      function: { name: c.name, arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments) },
    }));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({
      id: `chatcmpl-${n}`,
      object: 'chat.completion',
      choices: [{ index: 0, finish_reason: toolCalls.length ? 'tool_calls' : 'stop', message: { role: 'assistant', content: reply.text ?? null, ...(toolCalls.length ? { tool_calls: toolCalls } : {}) } }],
      usage: reply.usage ?? { prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 },
    }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  return {
    url,
    requests,
    script: (...replies) => void queue.push(...replies),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

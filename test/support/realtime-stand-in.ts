import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * A stand-in OpenAI Realtime server on 127.0.0.1: each connection runs a test's script, which
 * reads the client's events (`next`) and plays the model's part with the API's server events:
 * audio deltas and transcripts (`speak`), function calls, the caller's speech detected and
 * transcribed (`userSays`), errors. `beta` sends the beta names (`response.audio.delta`, …).
 *
 * Events carry the fields the Realtime reference gives them, no more: a function call's `name`
 * is on its item (`response.output_item.added` / `.done`, and `response.done`'s `output`), while
 * `response.function_call_arguments.done` has `response_id`, `item_id`, `output_index`, `call_id`
 * and `arguments` only.
 */
export interface SpeakOptions {
  responseId: string;
  itemId: string;
  audio?: Buffer;
  transcript?: string;
  /** Bytes of μ-law per delta (800 = 100 ms). */
  chunkBytes?: number;
  /** Function calls the response ends with (`argsText`: the arguments text as sent, e.g. cut short; else `args` as JSON). */
  calls?: { callId: string; name: string; args?: Record<string, unknown>; argsText?: string }[];
  /** Send only the start and the audio; the test sends the end itself (`finish`). */
  open?: boolean;
  status?: 'completed' | 'cancelled';
  /** false: `response.created` was sent already (a test timing the model's first audio sends it itself). */
  created?: boolean;
}

const BETA: Record<string, string> = {
  'response.output_audio.delta': 'response.audio.delta',
  'response.output_audio_transcript.done': 'response.audio_transcript.done',
};

export class ModelConnection {
  readonly received: any[] = [];
  private readonly consumed = new Set<number>();
  private waiters: (() => void)[] = [];
  readonly closed: Promise<void>;

  constructor(readonly ws: WebSocket, readonly request: IncomingMessage, private readonly beta: boolean) {
    ws.on('message', (data) => {
      this.received.push(JSON.parse(data.toString()));
      for (const w of this.waiters.splice(0)) w();
    });
    this.closed = new Promise((resolve) => ws.on('close', () => {
      resolve();
      for (const w of this.waiters.splice(0)) w();
    }));
  }

  /** The model name the client asked for (`?model=`). */
  get model(): string | null {
    return new URL(this.request.url!, 'http://x').searchParams.get('model');
  }

  /** Every caller audio byte the client appended, in order. */
  inputAudio(): Buffer {
    return Buffer.concat(this.received.filter((e) => e.type === 'input_audio_buffer.append').map((e) => Buffer.from(e.audio, 'base64')));
  }

  /** The first client event of `type` (matching `where`) not taken yet; waits for it. */
  async next(type: string, where: (e: any) => boolean = () => true, ms = 10_000): Promise<any> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.received.findIndex((e, n) => !this.consumed.has(n) && e.type === type && where(e));
      if (i >= 0) {
        this.consumed.add(i);
        return this.received[i];
      }
      if (Date.now() > deadline || this.ws.readyState > 1) throw new Error(`Realtime stand-in: no ${type} from the client`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 100);
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
  }

  /** Waits until `check` holds over what was received. */
  async until(check: () => boolean, what: string, ms = 10_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`Realtime stand-in: ${what} never happened`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  send(event: Record<string, unknown>): void {
    const type = this.beta ? (BETA[event.type as string] ?? event.type) : event.type;
    if (this.ws.readyState === 1) this.ws.send(JSON.stringify({ event_id: `event_${Math.random().toString(36).slice(2)}`, ...event, type }));
  }

  /** One response of the model: audio in deltas, its transcript, its function calls, then `response.done`. */
  speak(o: SpeakOptions): void {
    if (o.created !== false) this.responseCreated(o.responseId);
    if (o.audio?.length || o.transcript) {
      this.send({ type: 'response.output_item.added', response_id: o.responseId, output_index: 0, item: { id: o.itemId, object: 'realtime.item', type: 'message', status: 'in_progress', role: 'assistant', content: [] } });
    }
    const audio = o.audio ?? Buffer.alloc(0);
    const size = o.chunkBytes ?? 800;
    for (let at = 0; at < audio.length; at += size) {
      this.send({ type: 'response.output_audio.delta', response_id: o.responseId, item_id: o.itemId, output_index: 0, content_index: 0, delta: audio.subarray(at, at + size).toString('base64') });
    }
    if (!o.open) this.finish(o);
  }

  /** `response.created` alone (the model starts a response; `speak({ created: false })` goes on with it). */
  responseCreated(responseId: string): void {
    this.send({ type: 'response.created', response: { id: responseId, object: 'realtime.response', status: 'in_progress', output: [] } });
  }

  /** The rest of a response begun with `speak({ open: true })`. */
  finish(o: SpeakOptions): void {
    if (o.transcript !== undefined) this.send({ type: 'response.output_audio_transcript.done', response_id: o.responseId, item_id: o.itemId, output_index: 0, content_index: 0, transcript: o.transcript });
    const message = { id: o.itemId, object: 'realtime.item', type: 'message', role: 'assistant', status: 'completed' };
    const output: any[] = o.audio?.length || o.transcript ? [message] : [];
    if (output.length) this.send({ type: 'response.output_item.done', response_id: o.responseId, output_index: 0, item: message });
    for (const [n, c] of (o.calls ?? []).entries()) {
      const args = c.argsText ?? JSON.stringify(c.args ?? {});
      const item = { id: `fc_${c.callId}`, object: 'realtime.item', type: 'function_call', call_id: c.callId, name: c.name };
      const at = { response_id: o.responseId, output_index: n + 1 };
      this.send({ type: 'response.output_item.added', ...at, item: { ...item, status: 'in_progress', arguments: '' } });
      this.send({ type: 'response.function_call_arguments.delta', ...at, item_id: item.id, call_id: c.callId, delta: args });
      // As the reference shows it: no `name` here (it is on the item).
      this.send({ type: 'response.function_call_arguments.done', ...at, item_id: item.id, call_id: c.callId, arguments: args });
      this.send({ type: 'response.output_item.done', ...at, item: { ...item, status: 'completed', arguments: args } });
      output.push({ ...item, status: 'completed', arguments: args });
    }
    this.send({ type: 'response.done', response: { id: o.responseId, object: 'realtime.response', status: o.status ?? 'completed', output } });
  }

  /** The caller starts speaking (server VAD). */
  speechStarted(itemId: string): void {
    this.send({ type: 'input_audio_buffer.speech_started', audio_start_ms: 0, item_id: itemId });
  }

  /** The caller said something: detected, then transcribed. */
  userSays(itemId: string, text: string): void {
    this.speechStarted(itemId);
    this.send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: 1000, item_id: itemId });
    this.send({ type: 'conversation.item.input_audio_transcription.completed', item_id: itemId, content_index: 0, transcript: text });
  }

  close(code = 1011): void {
    this.ws.close(code);
  }
}

export interface RealtimeStandIn {
  /** ws://127.0.0.1:<port>/v1/realtime */
  url: string;
  connections: ModelConnection[];
  /** Failures of the scripts (a test asserts none). */
  errors: Error[];
  close(): Promise<void>;
}

export async function startRealtimeStandIn(script: (m: ModelConnection) => Promise<void>, options: { beta?: boolean } = {}): Promise<RealtimeStandIn> {
  const http = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server: http, path: '/v1/realtime' });
  const connections: ModelConnection[] = [];
  const errors: Error[] = [];
  wss.on('connection', (ws, req) => {
    const m = new ModelConnection(ws, req, !!options.beta);
    connections.push(m);
    script(m).catch((err: Error) => errors.push(err));
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  return {
    url: `ws://127.0.0.1:${(http.address() as AddressInfo).port}/v1/realtime`,
    connections,
    errors,
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

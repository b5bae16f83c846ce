/**
 * What the reply-latency benches share (bench/latency-accuracy.ts, bench/tracing-cost.ts): a
 * stand-in Chat Completions model whose time to its first token is set by the bench, and a relay
 * (ConversationRelay) desk on the local runtime: a relay agent, a number of its own, and calls
 * from the Twilio stand-in's relay client.
 */
import http, { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { startPlatform, type Platform } from '../shared/local/platform';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../test/support/twilio-carrier';
import type { RelayClient } from '../test/support/relay-client';
import { benchApi, twilioEnv } from './support';

export interface DelayedModel {
  /** The base URL (LLM_BASE_URL), `http://127.0.0.1:<port>/v1`. */
  url: string;
  /** The wait before the first token (a whole answer's wait when not streamed), ms; the bench sets it between passes. */
  delayMs: number;
  /** Per request, on the model's own clock: from the request's arrival to its first token written (a whole answer: to its end). */
  own: number[];
  close(): Promise<void>;
}

/**
 * Waits until `ms` have passed since `t0` (performance.now()): a timer for all but the last 2 ms,
 * then turns of the event loop, so the wait ends within a fraction of a millisecond of `ms`
 * (a timer alone ends up to a millisecond late: libuv's clock is in whole milliseconds).
 */
async function waitPrecisely(ms: number, t0: number): Promise<void> {
  const coarse = ms - 2 - (performance.now() - t0);
  if (coarse > 0) await new Promise((r) => setTimeout(r, coarse));
  while (performance.now() - t0 < ms) await new Promise((r) => setImmediate(r));
}

/**
 * A Chat Completions stand-in on loopback: waits `delayMs` after the request arrived (to within a
 * fraction of a millisecond: waitPrecisely), then streams (server-sent chunks, as OpenAI streams:
 * the role and the first words at once, then the rest) or answers whole, and notes its own time
 * to its first token.
 */
export async function startDelayedModel(reply = 'Sure, I can help with that today.'): Promise<DelayedModel> {
  const state = { delayMs: 0, own: [] as number[] };
  const server: Server = createServer((req, res) => {
    const t0 = performance.now();
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString('utf8')));
    req.on('end', async () => {
      const body = JSON.parse(raw) as { stream?: boolean };
      if (state.delayMs) await waitPrecisely(state.delayMs, t0);
      const base = { id: 'bench', created: 1_700_000_000, model: 'bench' };
      const usage = { prompt_tokens: 10, completion_tokens: 8, total_tokens: 18 };
      if (!body.stream) {
        const json = JSON.stringify({ ...base, object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }], usage });
        res.writeHead(200, { 'content-type': 'application/json' }).end(json);
        state.own.push(performance.now() - t0);
        return;
      }
      const chunk = (delta: Record<string, unknown>, finish: string | null = null) => `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      const [first, ...rest] = reply.split(/(?<= )/);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(chunk({ role: 'assistant', content: '' }) + chunk({ content: first }));
      state.own.push(performance.now() - t0);
      for (const word of rest) res.write(chunk({ content: word }));
      res.end(chunk({}, 'stop') + `data: ${JSON.stringify({ ...base, object: 'chat.completion.chunk', choices: [], usage })}\n\ndata: [DONE]\n\n`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  });
}

/** The platform's settings for the delayed model as every agent's model (and loopback allowed). */
export const delayedModelEnv = (model: { url: string }): Record<string, string> => ({
  LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-bench', LLM_MODEL: 'bench', ALLOW_LOOPBACK_FETCH: 'true',
});

export interface RelayDesk {
  twilio: TwilioCarrierStandIn;
  /** A new inbound call to the relay agent: its ConversationRelay client and the call's id. */
  call(): Promise<{ relay: RelayClient; callId: string }>;
  /** Says `text` and waits for the reply's first `text` token: the client's own time to it (ms), then for the reply's end. */
  prompt(relay: RelayClient, text: string): Promise<number>;
  /** Hangs up and waits until the platform wrote the call's end. */
  hangUp(relay: RelayClient): Promise<void>;
}

/** How a relay desk waits for the platform: its relay handler idle, its queues empty (in its process, or asked of it from another). */
export interface PlatformIdle {
  relay(): Promise<void>;
  queues(): Promise<void>;
}

/** A platform in this process, waited on directly. */
const idleOf = (platform: Platform): PlatformIdle => ({ relay: () => platform.relay.idle(), queues: () => platform.queue.waitForIdle(10_000) });

/** A relay agent (no tools, no knowledge base) answering a number of its own, called by the Twilio stand-in. */
export async function startRelayDesk(platform: { url: string }, key: string, twilio: TwilioCarrierStandIn, idle: PlatformIdle): Promise<RelayDesk> {
  const api = benchApi(platform.url, key, { strict: true });
  const agent = await api('POST', '/api/v1/agents', { name: 'Relay bench', voice_pipeline: 'relay', prompt: 'Be brief.', begin_message: 'Hello.' });
  const phone = `+1415${String(2_000_000 + Math.floor(Math.random() * 7_000_000))}`;
  await api('POST', '/api/v1/phone-numbers/import', { phone, type: 'pstn', inbound_agent_id: agent.data.id });
  twilio.adopt(phone, { voiceUrl: `${platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${platform.url}/api/v1/telephony/twilio/status` });
  return {
    twilio,
    async call() {
      const placed = await twilio.incomingCall('+14155550142', phone);
      const relay = placed.relay!;
      return { relay, callId: /<Parameter name="call_id" value="([^"]*)"/.exec(placed.twiml)![1]! };
    },
    async prompt(relay, text) {
      const before = relay.received.length;
      const t0 = performance.now();
      relay.say(text);
      await relay.until(() => relay.received.slice(before).some((m) => m.type === 'text'), 'the first token');
      const first = performance.now() - t0;
      await relay.until(() => relay.received.slice(before).some((m) => m.type === 'text' && m.last), 'the reply');
      await idle.relay();
      return first;
    },
    async hangUp(relay) {
      relay.close();
      await relay.closed;
      await idle.relay();
      await idle.queues();
    },
  };
}

/** The Twilio stand-in for a relay desk. */
export const startRelayTwilio = () => startTwilioCarrier({ accountSid: 'AC000000000000000000000000000bench', authToken: 'bench' });

/** Nearest-rank percentile. */
export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!;

/**
 * The platform's API over node:http with one keep-alive connection (not fetch: with tracing on, the
 * platform's undici instrumentation would trace the bench's own requests too).
 */
export function benchClient(baseUrl: string, key: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const { hostname, port } = new URL(baseUrl);
  /**
   * One request. `onEvent`, for a streamed answer: called with each server-sent event and the time
   * since the request was sent (ms). Resolves with the status, the parsed body (a JSON answer) and
   * the time to the answer's last byte.
   */
  const send = (method: string, path: string, body?: unknown, onEvent?: (event: string, data: any, ms: number) => void) =>
    new Promise<{ status: number; body: any; ms: number }>((resolve, reject) => {
      const payload = body === undefined ? undefined : JSON.stringify(body);
      const headers: Record<string, string | number> = { 'x-api-key': key, ...(payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}), ...(onEvent ? { accept: 'text/event-stream' } : {}) };
      const t0 = performance.now();
      const req = http.request({ hostname, port, path, method, agent, headers }, (res) => {
        let text = '';
        let pending = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          if (!onEvent) return void (text += chunk);
          pending += chunk;
          for (let end = pending.indexOf('\n\n'); end >= 0; end = pending.indexOf('\n\n')) {
            const block = pending.slice(0, end);
            pending = pending.slice(end + 2);
            const event = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
            const data = block.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
            let parsed: unknown = data;
            try {
              parsed = JSON.parse(data);
            } catch {
              // not JSON: kept as text
            }
            onEvent(event, parsed, performance.now() - t0);
          }
        });
        res.on('end', () => {
          const ms = performance.now() - t0;
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = text;
          }
          if (!onEvent && (res.statusCode ?? 0) >= 300) return reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
          resolve({ status: res.statusCode ?? 0, body: parsed, ms });
        });
      });
      req.on('error', reject);
      req.end(payload);
    });
  return { send, close: () => agent.destroy() };
}

/**
 * The local runtime as both reply benches run it: the delayed model as every agent's model, the
 * relay desk, and the bench's client. `stop()` takes it all down.
 */
export async function startReplyBench() {
  const model = await startDelayedModel();
  const twilio = await startRelayTwilio();
  const key = generateApiKey();
  const platform = await startPlatform({
    port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, voice: false, log: () => undefined,
    env: { LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000', ...twilioEnv(twilio), ...delayedModelEnv(model), VOICE_RUNTIME_URL: 'ws://127.0.0.1:9/stream' },
  });
  const client = benchClient(platform.url, key);
  const stop = async () => {
    client.close();
    await twilio.close();
    await platform.stop();
    await model.close();
  };
  try {
    const desk = await startRelayDesk(platform, key, twilio, idleOf(platform));
    return { model, platform, client, desk, key, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Each boundary of a reply's `latency_ms` against what is known outside the platform (issue 43,
 * "Measured"): a stand-in model that waits a known time to its first token (25 ms, then 100 ms),
 * read back from `latency_ms.model`; and `e2e` against the time the bench's client measures itself,
 * for a chat turn answered whole, a streamed chat turn (to the first `message.delta`) and a relay
 * prompt (to the first `text` token). Goals, at p50: `model` within 2 ms of the known delay, `e2e`
 * within 5 ms of the client's own time. The kinds take turns within every iteration.
 *
 * Part of `npm run bench` (section `accuracy`); alone:
 *
 *   LOG_LEVEL=SILENT BENCH_ACCURACY_REPLIES=100 npx tsx bench/latency-accuracy.ts
 */
import { execFileSync, fork } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { startPlatform, type Platform } from '../shared/local/platform';
import { until } from '../test/support/until';
import { benchClient, delayedModelEnv, pct, startDelayedModel, startRelayDesk, startRelayTwilio, type DelayedModel, type RelayDesk } from './latency-support';
import { runAsScript, twilioEnv } from './support';

const REPLIES = Number(process.env.BENCH_ACCURACY_REPLIES ?? 100);
const WARMUP = 10;
const DELAYS_MS = [25, 100];
/** Relay prompts per call (then the caller hangs up and calls again), and chat turns per chat. */
const PER_CONVERSATION = 25;
const KINDS = ['chat', 'streamed', 'relay'] as const;
type Kind = (typeof KINDS)[number];

interface Sample {
  /** The client's own time: to the answer (chat), to the first delta (streamed), to the first token (relay). */
  client: number;
  /** The model's own time to its first token (on its clock). */
  own: number;
  e2e?: number;
  model?: number;
}

/** Per delay, the samples of each kind: run where the outside world runs (the client, the model, the carrier). */
type Measured = { delay: number; samples: Record<Kind, Sample[]> }[];

async function measure(client: ReturnType<typeof benchClient>, model: DelayedModel, desk: RelayDesk): Promise<Measured> {
  const measured: Measured = [];
  const agent = (await client.send('POST', '/api/v1/agents', { name: 'Accuracy', begin_message: 'Hello!' })).body.data;
  const newChat = async () => (await client.send('POST', '/api/v1/chats', { agent_id: agent.id })).body.data.id as string;
  for (const delay of DELAYS_MS) {
    model.delayMs = delay;
    const samples: Record<Kind, Sample[]> = { chat: [], streamed: [], relay: [] };
    let chatId = await newChat();
    let chatTurns = 0;
    let call = await desk.call();
    // A relay reply's figures are read from the call's transcript once it ended: its samples wait until then.
    let callSamples: Sample[] = [];
    const endCall = async () => {
      await desk.hangUp(call.relay);
      const ended = await until(async () => (await client.send('GET', `/api/v1/calls/${call.callId}`)).body.data, (c: any) => c.status === 'ended' && (c.transcript ?? []).filter((t: any) => t.latency_ms).length >= callSamples.length, 'the call ended with its transcript');
      const timed = ended.transcript.filter((t: any) => t.role === 'agent' && t.latency_ms);
      callSamples.forEach((s, i) => Object.assign(s, { e2e: timed[i].latency_ms.e2e, model: timed[i].latency_ms.model }));
      samples.relay.push(...callSamples.filter((s) => s.own >= 0));
      callSamples = [];
    };
    for (let i = 0; i < WARMUP + REPLIES; i++) {
      const warm = i < WARMUP;
      // Two chat turns an iteration (whole and streamed): a new chat before the next pair would pass the size.
      if (chatTurns + 2 > PER_CONVERSATION) {
        chatId = await newChat();
        chatTurns = 0;
      }
      if (callSamples.length === PER_CONVERSATION) {
        await endCall();
        call = await desk.call();
      }
      for (let j = 0; j < KINDS.length; j++) {
        const kind = KINDS[(i + j) % KINDS.length]!;
        const asked = model.own.length;
        if (kind === 'relay') {
          const client = await desk.prompt(call.relay, `Question ${i}?`);
          // Warm-up prompts are in the transcript too: kept in order, dropped when read (own < 0).
          callSamples.push({ client, own: warm ? -1 : model.own[asked]! });
          continue;
        }
        chatTurns++;
        let firstDelta: number | undefined;
        let completed: any;
        const answer = await client.send('POST', `/api/v1/chats/${chatId}/messages`, { content: `Question ${i}?` }, kind === 'streamed' ? (event, data, ms) => {
          if (event === 'message.delta') firstDelta ??= ms;
          if (event === 'turn.completed') completed = data;
        } : undefined);
        if (warm) continue;
        const messages = kind === 'streamed' ? completed.messages : answer.body.data.messages;
        const figures = messages.find((m: any) => m.role === 'agent' && m.latency_ms).latency_ms;
        samples[kind].push({ client: kind === 'streamed' ? firstDelta! : answer.ms, own: model.own[asked]!, e2e: figures.e2e, model: figures.model });
      }
    }
    await endCall();
    measured.push({ delay, samples });
  }
  return measured;
}

/**
 * The outside world's process: the stand-in model, the Twilio stand-in with its relay client, and
 * the bench's client, apart from the platform's process as they are deployed (the platform's work
 * after a reply's first piece, such as the turn's store, does not hold up the client's reading or
 * the model's timer, as it would in one event loop). It asks the platform's process over IPC to
 * wait for its relay handler and its queues.
 */
async function outside(): Promise<void> {
  const model = await startDelayedModel();
  const twilio = await startRelayTwilio();
  let asked = 0;
  const pending = new Map<number, () => void>();
  const ask = (what: 'relay' | 'queues') => new Promise<void>((resolve) => {
    const id = ++asked;
    pending.set(id, resolve);
    process.send!({ idle: what, id });
  });
  const started = new Promise<{ url: string; key: string }>((resolve) => process.on('message', (m: any) => (m.done ? pending.get(m.done)?.() : m.url && resolve(m))));
  process.send!({ env: { ...twilioEnv(twilio), ...delayedModelEnv(model) } });
  const { url, key } = await started;
  const client = benchClient(url, key);
  const desk = await startRelayDesk({ url }, key, twilio, { relay: () => ask('relay'), queues: () => ask('queues') });
  const measured = await measure(client, model, desk);
  client.close();
  await twilio.close();
  await model.close();
  process.send!({ measured }, () => process.exit(0));
}

export async function latencyAccuracyBenchmark(): Promise<string> {
  const child = fork(__filename, ['outside'], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const pinned = pinCores(child.pid!);
  const exited = new Promise<never>((_, reject) => child.once('exit', (code) => reject(new Error(`the bench's outside process exited (${code})`))));
  exited.catch(() => undefined);
  const message = <T>(pick: (m: any) => T | undefined) => Promise.race([exited, new Promise<T>((resolve) => {
    const on = (m: unknown) => {
      const got = pick(m);
      if (got !== undefined) child.off('message', on), resolve(got);
    };
    child.on('message', on);
  })]);
  let platform: Platform | undefined;
  try {
    const env = await message((m) => m.env as Record<string, string> | undefined);
    const key = generateApiKey();
    platform = await startPlatform({
      port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, voice: false, log: () => undefined,
      env: { LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000', ...env, VOICE_RUNTIME_URL: 'ws://127.0.0.1:9/stream' },
    });
    const running = platform;
    child.on('message', (m: any) => {
      if (!m.idle) return;
      void (m.idle === 'relay' ? running.relay.idle() : running.queue.waitForIdle(10_000)).then(() => child.send({ done: m.id }));
    });
    child.send({ url: platform.url, key });
    const measured = await message((m) => m.measured as Measured | undefined);
    return report(measured, pinned);
  } finally {
    child.kill();
    await platform?.stop();
  }
}

/**
 * With two cores or more (and taskset), the outside process gets a core of its own, as the model
 * and the callers have machines of their own, and this process (the platform, with DynamoDB
 * Local, started after, on the same core) the other: on two cores the three otherwise take turns,
 * and the stand-in model's timer and the client's reading wait for a core while DynamoDB Local
 * works on a turn's writes, a wait no deployment has (DynamoDB is not on the model's machine).
 */
function pinCores(childPid: number): boolean {
  if (cpus().length < 2) return false;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', '1', String(childPid)], { stdio: 'ignore' });
    execFileSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function report(measured: Measured, pinned: boolean): string {
  const rows: string[] = [];
  const verdicts: boolean[] = [];
  for (const { delay, samples } of measured) {
    for (const kind of KINDS) {
        const s = samples[kind];
        const p50 = (f: (x: Sample) => number) => pct(s.map(f), 50);
        const modelOff = p50((x) => x.model! - delay);
        const e2eOff = p50((x) => x.client - x.e2e!);
        verdicts.push(Math.abs(modelOff) <= 2, Math.abs(e2eOff) <= 5);
        const what = { chat: 'chat turn, answered whole (client: to the last byte)', streamed: 'chat turn, streamed (client: to the first `message.delta`)', relay: 'relay prompt (client: to the first `text` token)' }[kind];
      rows.push(`| ${delay} ms | ${what} | ${s.length} | ${p50((x) => x.own).toFixed(1)} | ${p50((x) => x.model!)} | ${modelOff >= 0 ? '+' : ''}${modelOff.toFixed(1)} ${Math.abs(modelOff) <= 2 ? '✓' : '✗'} | ${p50((x) => x.model! - x.own).toFixed(1)} | ${p50((x) => x.client).toFixed(1)} | ${p50((x) => x.e2e!)} | ${e2eOff >= 0 ? '+' : ''}${e2eOff.toFixed(1)} ${Math.abs(e2eOff) <= 5 ? '✓' : '✗'} | ${pct(s.map((x) => x.client - x.e2e!), 90).toFixed(1)} |`);
    }
  }
  const met = verdicts.every(Boolean);
  return [
    '## (accuracy) Reply latency: each boundary against what is known outside',
    '',
    `\`BENCH_SECTIONS=accuracy npm run bench\` or \`npx tsx bench/latency-accuracy.ts\`. A stand-in Chat Completions model on loopback (bench/latency-support.ts) waits a known time from its request's arrival to its first token, ${DELAYS_MS.join(' ms, then ')} ms (a timer, then turns of its event loop: within a fraction of a millisecond); the local runtime asks it for every chat turn (one agent, no tools, no knowledge base) and every relay prompt (a relay agent called through the Twilio stand-in). The model, the Twilio stand-in with its relay client and the bench's client run in one process, the platform (with DynamoDB Local) in another, as they are deployed apart${pinned ? ', each on a core of its own (taskset: on two shared cores, the stand-in\'s timer and the client\'s reading otherwise wait for a core while DynamoDB Local works on a turn\'s writes, which no deployment does)' : ''}. ${REPLIES} replies of each kind per delay after ${WARMUP} to warm up, the three kinds taking turns in every iteration; chats of ${PER_CONVERSATION} turns, calls of ${PER_CONVERSATION} prompts. \`model\` and \`e2e\` are the reply's \`latency_ms\` (whole ms, the platform's clock); "model's own" is the stand-in's time from its request's arrival to its first token written, on its clock; the client's time is the bench's own (node:http, one keep-alive connection; the relay client's WebSocket). All figures p50 over the replies (of each difference per reply), ms. Goals: \`model\` within 2 ms of the known delay, \`e2e\` within 5 ms of the client's time. Load average when measured: ${loadavg().map((l) => l.toFixed(2)).join(', ')} (1/5/15 min, ${cpus().length} cores).`,
    '',
    '| delay | reply | n | model\'s own | `model` | `model` − delay | `model` − model\'s own | client | `e2e` | client − `e2e` | client − `e2e`, p90 |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `**${met ? 'Every goal met' : 'Not every goal met (✗ above)'}.** \`model\` runs from the model request leaving (the adapter's \`onSent\`: the request's last byte written to its connection) to its first token (a request answered whole: its end), on the platform's monotonic clock, so it holds the response's loopback trip and the adapter's reading of the first chunk on top of the stand-in's own time, and \`model\` is whole ms (fetch, which the adapter used before, took about 1.1 ms more to a response's first byte: shared/adapters/llm/http-post.ts). The client's time runs from the request sent to what \`e2e\` ends at: the first delta or token, or for a chat answered whole the answer's last byte, each needing its hop back. A chat answered whole ends \`e2e\` with the answer ready, after the turn's write, which the answer waits for; its figures are read from the answer, and the same are stored after it (docs/api.md, "A chat answered whole"; test/integration/chat-reply-latency.test.ts holds the stored ones equal). Until 2026-11-30 that kind ended \`e2e\` before the write and read 9–14 ms under the client's time.`,
    '',
  ].join('\n');
}

if (process.argv[2] === 'outside') {
  outside().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else runAsScript(module, latencyAccuracyBenchmark);

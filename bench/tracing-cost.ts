/**
 * What tracing costs (issue 43, "Measured"): a chat turn and a relay prompt with tracing off (no
 * OTEL_* setting), on (every span exported over OTLP/HTTP to a local collector: the in-process
 * receiver of the tests, in this parent process, so its parsing is not charged to the platform)
 * and WITHOUT the tracing code at all (bench/no-tracing/register.cjs resolves the telemetry hook
 * modules to bare pass-through stubs). Each mode runs in fresh processes, interleaved off, on,
 * none, none, on, off (BENCH_TRACE_ROUNDS times) so the machine's drift weighs on all alike; each
 * process warms up, then times BENCH_TRACE_ITERATIONS iterations of one chat turn (answered whole)
 * and one relay prompt (to its first token), the two alternating first, against a model that
 * answers at once (so the platform's own work shows). The wall time is the bench client's own
 * (node:http: fetch would be traced too); the CPU time is the process's own per operation.
 * Goals: off ≤ 0.2 ms p50 added over none, on ≤ 1.5 ms p50 added.
 *
 * The processes scatter by more than the goals, so two parts measure in one process: off against
 * none (`inproc`: two copies of the tree, one with the hooks stubbed; chat, getAgent and the relay's
 * prompt handler) and on against off (`onoff`:
 * tracing switched on and off in blocks, flushed before each answer as deployed; paired
 * differences of the blocks' p50s).
 *
 * Then the cold start of a traced function against the floor: bundles built as the stack builds them
 * (lib/bundle.ts), each loaded in a fresh process and invoked once (a request without a key, answered
 * 401 before any table read), tracing off and on (the SDK is imported at that first invocation).
 *
 *   npx tsx bench/tracing-cost.ts                # every part, ~15 min on 2 cores
 *   BENCH_TRACE_PARTS=onoff BENCH_TRACE_ITERATIONS=300 npx tsx bench/tracing-cost.ts
 *   BENCH_TRACE_PARTS=cold npx tsx bench/tracing-cost.ts
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleEntries } from '../lib/bundle';
import { pct, startReplyBench } from './latency-support';
import { runAsScript } from './support';

const ITERATIONS = Number(process.env.BENCH_TRACE_ITERATIONS ?? 150);
const WARMUP = Number(process.env.BENCH_TRACE_WARMUP ?? 30);
const ROUNDS = Number(process.env.BENCH_TRACE_ROUNDS ?? 2);
const COLD_ROUNDS = Number(process.env.BENCH_TRACE_COLD_ROUNDS ?? 15);
const PARTS = new Set((process.env.BENCH_TRACE_PARTS ?? 'turns,inproc,onoff,cold').split(','));
const PER_CONVERSATION = 25;
const MODES = ['off', 'on', 'none'] as const;
type Mode = (typeof MODES)[number];
const OPS = ['chat', 'relay'] as const;
type Op = (typeof OPS)[number];
/** The order of one round: each mode first and last equally often. */
const ROUND: Mode[] = ['off', 'on', 'none', 'none', 'on', 'off'];
const root = join(__dirname, '..');
const register = join(__dirname, 'no-tracing', 'register.cjs');
const STUBBED = ['tracing', 'http', 'jobs', 'aws', 'genai'];

interface ChildResult {
  mode: Mode;
  wall: Record<Op, number[]>;
  cpu: Record<Op, number[]>;
  redirects: number;
}

/** One process: the platform, a chat agent and a relay desk, then the timed operations. */
async function child(mode: Mode): Promise<ChildResult> {
  const { client, desk, stop } = await startReplyBench();
  const wall: Record<Op, number[]> = { chat: [], relay: [] };
  const cpu: Record<Op, number[]> = { chat: [], relay: [] };
  try {
    const agent = (await client.send('POST', '/api/v1/agents', { name: 'Cost', begin_message: 'Hello!' })).body.data;
    let chatId = '';
    let call = await desk.call();
    let prompts = 0;
    for (let i = 0; i < WARMUP + ITERATIONS; i++) {
      if (i % PER_CONVERSATION === 0) chatId = (await client.send('POST', '/api/v1/chats', { agent_id: agent.id })).body.data.id;
      if (prompts === PER_CONVERSATION) {
        await desk.hangUp(call.relay);
        call = await desk.call();
        prompts = 0;
      }
      for (let j = 0; j < OPS.length; j++) {
        const op = OPS[(i + j) % OPS.length]!;
        const c = process.cpuUsage();
        const ms = op === 'chat' ? (await client.send('POST', `/api/v1/chats/${chatId}/messages`, { content: `Question ${i}?` })).ms : await desk.prompt(call.relay, `Question ${i}?`);
        const used = process.cpuUsage(c);
        if (op === 'relay') prompts++;
        if (i < WARMUP) continue;
        wall[op].push(ms);
        cpu[op].push((used.user + used.system) / 1000);
      }
    }
    await desk.hangUp(call.relay);
  } finally {
    await stop();
  }
  const redirects = (globalThis as { __noTracingRedirects?: () => number }).__noTracingRedirects?.() ?? 0;
  return { mode, wall, cpu, redirects };
}

/** Every name each real hook module exports, its stub exports too (else "none" would not be the same program minus tracing). */
async function assertStubsComplete(): Promise<void> {
  for (const name of STUBBED) {
    const real = Object.keys(await import(join(root, 'shared', 'telemetry', `${name}.ts`))).filter((k) => k !== 'default' && k !== '__esModule');
    const stub = new Set(Object.keys(await import(join(__dirname, 'no-tracing', `${name}.ts`))));
    const missing = real.filter((k) => !stub.has(k));
    if (missing.length) throw new Error(`bench/no-tracing/${name}.ts lacks ${missing.join(', ')} (shared/telemetry/${name}.ts exports it): update the stub`);
  }
}

function runChild(mode: Mode, collector: string): Promise<ChildResult> {
  const flags = ['--import', 'tsx', ...(mode === 'none' ? ['--require', register] : [])];
  // The logger is built at import, before the platform's settings apply: silenced here, so no mode pays for log lines to its pipe.
  const env: NodeJS.ProcessEnv = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', NODE_OPTIONS: '', LOG_LEVEL: 'SILENT' };
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_')) delete env[k];
  if (mode === 'on') Object.assign(env, { OTEL_EXPORTER_OTLP_ENDPOINT: collector, OTEL_SERVICE_NAME: 'bench' });
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...flags, __filename, 'child', mode], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (c: Buffer) => (out += c));
    proc.stderr.on('data', (c: Buffer) => (err += c));
    proc.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{"mode"'));
      if (code !== 0 || !line) return reject(new Error(`${mode} run failed (${code}): ${err.slice(-2000)}`));
      resolve(JSON.parse(line) as ChildResult);
    });
  });
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (n: number, digits = 2) => `${n >= 0 ? '+' : '−'}${Math.abs(n).toFixed(digits)}`;

async function turns(): Promise<string> {
  await assertStubsComplete();
  const { startOtlpReceiver } = await import('../test/support/otlp-receiver');
  const collector = await startOtlpReceiver();
  const results: ChildResult[] = [];
  const order = Array.from({ length: ROUNDS }, () => ROUND).flat();
  try {
    for (const mode of order) {
      const before = collector.spans.length;
      const result = await runChild(mode, collector.url);
      if (mode === 'none' && result.redirects === 0) throw new Error('the "none" run loaded the tracing code (no import reached a stub)');
      // The last batch leaves on the SDK's shutdown (platform.stop flushes): every span has arrived.
      (result as ChildResult & { spans?: number }).spans = collector.spans.length - before;
      results.push(result);
      console.error(`${mode}: chat p50 ${pct(result.wall.chat, 50).toFixed(2)} ms, relay p50 ${pct(result.wall.relay, 50).toFixed(2)} ms, ${collector.spans.length - before} spans`);
    }
  } finally {
    await collector.close();
  }
  const load = loadavg();
  // Every operation's times, per process in order, for a second look (the path is printed).
  const raw = join(mkdtempSync(join(tmpdir(), 'vap-bench-tracing-')), 'tracing-runs.json');
  writeFileSync(raw, JSON.stringify(results));
  console.error(`every process's times: ${raw}`);
  const of = (mode: Mode) => results.filter((r) => r.mode === mode);
  // Per mode: the mean over its processes of each process's p50 (a process's own level varies; the interleaving spreads that over the modes alike).
  const p50 = (mode: Mode, op: Op) => mean(of(mode).map((r) => pct(r.wall[op], 50)));
  const p90 = (mode: Mode, op: Op) => mean(of(mode).map((r) => pct(r.wall[op], 90)));
  const cpuOf = (mode: Mode, op: Op) => mean(of(mode).map((r) => mean(r.cpu[op])));
  const spans = mean(of('on').map((r) => (r as ChildResult & { spans?: number }).spans ?? 0)) / (WARMUP + ITERATIONS);
  const label: Record<Mode, string> = { none: 'without the tracing code', off: 'tracing off', on: 'tracing on (OTLP/HTTP to a local collector)' };
  const rows = OPS.flatMap((op) => (['none', 'off', 'on'] as Mode[]).map((mode) => `| ${op === 'chat' ? 'chat turn (answered whole)' : 'relay prompt (to the first token)'} | ${label[mode]} | ${p50(mode, op).toFixed(2)} ms | ${mode === 'none' ? '' : `${fmt(p50(mode, op) - p50('none', op))} ms`} | ${p90(mode, op).toFixed(2)} ms | ${cpuOf(mode, op).toFixed(2)} ms | ${mode === 'none' ? '' : `${fmt(cpuOf(mode, op) - cpuOf('none', op))} ms`} |`));
  // The processes' own levels scatter (the machine, DynamoDB Local's JIT): a difference counts only beyond twice its standard error.
  const sd = (xs: number[]) => Math.sqrt(xs.reduce((a, x) => a + (x - mean(xs)) ** 2, 0) / Math.max(1, xs.length - 1));
  const error = (mode: Mode, op: Op) => {
    const [a, b] = [of(mode).map((r) => pct(r.wall[op], 50)), of('none').map((r) => pct(r.wall[op], 50))];
    return 2 * Math.sqrt(sd(a) ** 2 / a.length + sd(b) ** 2 / b.length);
  };
  const judge = (mode: Mode, goal: number) => OPS.map((op) => {
    const added = p50(mode, op) - p50('none', op);
    const e = error(mode, op);
    // Fewer than three processes a mode: their scatter is no estimate at all.
    // Undecided: the processes scatter more than the goal; the paired parts (inproc, onoff) decide it.
    const verdict = Math.min(of(mode).length, of('none').length) < 3 ? 'too few processes to decide' : added + e <= goal ? 'met' : added - e > goal ? '**over the goal**' : 'wider than the goal: undecided here';
    return `${fmt(added)} ± ${e.toFixed(2)} ms (${op}: ${verdict})`;
  }).join(', ');
  const perProcess = OPS.map((op) => `${op}: ${results.map((r) => `${r.mode} ${pct(r.wall[op], 50).toFixed(2)}`).join(', ')}`).join('; ');
  return [
    '### Tracing off, on, and without the tracing code',
    '',
    `\`npx tsx bench/tracing-cost.ts\` (not part of \`npm run bench\`). ${order.length} fresh processes in the order ${order.join(', ')}, each the whole local runtime (DynamoDB Local, the relay's WebSocket routes as their Lambda handlers) with a stand-in model answering at once, timing ${ITERATIONS} iterations after ${WARMUP} to warm up; an iteration is one chat turn (a chat of ${PER_CONVERSATION} turns at most, no tools) and one relay prompt (calls of ${PER_CONVERSATION} prompts), the two taking turns going first. "Without the tracing code": \`node --require bench/no-tracing/register.cjs\` resolves shared/telemetry/{${STUBBED.join(',')}}.ts to bare pass-throughs (the handler itself, no client middleware, no flag read; the bench fails if a stub lacks an export of its module or no import reached one). "On": every span exported (the default batch processor) to the tests' OTLP/HTTP receiver in the bench's parent process, ${spans.toFixed(1)} spans per iteration. p50 and p90: the mean over a mode's processes of each process's figure; CPU: the platform process's own CPU time per operation (the bench's client included, the same in every mode), mean. Load average when measured: ${load.map((l) => l.toFixed(2)).join(', ')} (1/5/15 min, ${cpus().length} cores).`,
    '',
    '| operation | mode | p50 | added over none (p50) | p90 | CPU | CPU added |',
    '|---|---|---|---|---|---|---|',
    ...rows,
    '',
    `**Added over none at p50, ± twice its standard error over the processes: off ${judge('off', 0.2)} (goal ≤ 0.2 ms); on ${judge('on', 1.5)} (goal ≤ 1.5 ms).** "Met" needs the difference plus its error within the goal, "over the goal" the difference minus its error beyond it; "undecided here": the processes scatter more than the goal, so this comparison cannot decide it (more rounds, BENCH_TRACE_ROUNDS, or a quieter machine would); the two paired measurements in one process below decide it. Each process's p50 (ms), in order: ${perProcess}.`,
    '',
  ].join('\n');
}

/**
 * Off against none in ONE process, where the processes' scatter cannot hide 0.2 ms: two copies of
 * shared/ and functions/, one as it is and one with the telemetry hook modules replaced by the stubs
 * (temporary trees, neither the one the local runtime runs), and the handlers of both trees
 * invoked directly in turns against one local runtime: a chat turn (sendChatMessage, an API
 * Gateway event), GET /agents/{id}, and a relay prompt (the relay's
 * `$default` handler with a WebSocket MESSAGE event on a call's own connection: each tree answers
 * its own call, its first prompt not counted, since the connection's setup was read by the real
 * tree's runtime). Tracing stays off (no OTEL_*), so this is "off" against "none"; "on" needs a
 * process of its own (its SDK is global). Verdicts: the mean of the blocks' paired p50 differences.
 */
async function inProcess(): Promise<string> {
  const BLOCK = 20;
  const { cpSync, symlinkSync } = await import('node:fs');
  // Two copies, neither the one the local runtime itself runs (whose modules serve every other request and are
  // warmer): "off" as it is, "none" with the hook modules replaced by the stubs.
  const copyOf = (prefix: string) => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    for (const sub of ['shared', 'functions']) cpSync(join(root, sub), join(dir, sub), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
    return dir;
  };
  const copy = copyOf('vap-bench-no-tracing-');
  const copyOff = copyOf('vap-bench-tracing-off-');
  for (const name of STUBBED) cpSync(join(__dirname, 'no-tracing', `${name}.ts`), join(copy, 'shared', 'telemetry', `${name}.ts`));
  const { client, desk, key, stop } = await startReplyBench();
  try {
    const { apiEvent, lambdaContext } = await import('../test/support/events');
    type Handler = (e: unknown, c: unknown) => Promise<{ statusCode?: number } | undefined>;
    const load = async (tree: string, entry: string) => ((await import(join(tree, entry))) as { handler: Handler }).handler;
    const trees = { off: copyOff, none: copy } as const;
    const both = async (entry: string) => ({ off: await load(trees.off, entry), none: await load(trees.none, entry) });
    const handlers = { chat: await both('functions/chats/send-message.ts'), get: await both('functions/agents/get.ts'), relay: await both('functions/relay/default.ts') };
    if (handlers.relay.off === handlers.relay.none) throw new Error('both trees gave the same relay handler');

    // The relay's replies leave through the connections port the local runtime installed (globalThis, so both trees
    // use it): wrapped to learn each new call's connection id and the time the platform posts a prompt's first token.
    const LOCAL = Symbol.for('vap.localRelayConnections');
    const holder = globalThis as unknown as Record<symbol, { post(id: string, data: string): Promise<void>; close(id: string): Promise<void> }>;
    const port = holder[LOCAL]!;
    const seen: string[] = [];
    let firstToken: { connectionId: string; at: number } | undefined;
    holder[LOCAL] = {
      post(id, data) {
        if (!seen.includes(id)) seen.push(id);
        if (firstToken?.connectionId === id && !firstToken.at && (JSON.parse(data) as { type?: string }).type === 'text') firstToken.at = performance.now();
        return port.post(id, data);
      },
      close: (id) => port.close(id),
    };
    type Call = Awaited<ReturnType<typeof desk.call>> & { connectionId: string };
    const newCall = async (): Promise<Call> => {
      const before = seen.length;
      const call = await desk.call();
      // The greeting is TwiML's (welcomeGreeting), never posted: the first reply, through the socket, names the connection.
      await desk.prompt(call.relay, 'Hello?');
      if (seen.length !== before + 1) throw new Error('the first prompt was not answered on one new connection');
      return { ...call, connectionId: seen[seen.length - 1]! };
    };

    const agent = (await client.send('POST', '/api/v1/agents', { name: 'In process', begin_message: 'Hello!' })).body.data;
    const chats = { off: '', none: '' };
    const calls: { off?: Call; none?: Call } = {};
    const invoke = async (h: Handler, event: unknown) => {
      const c = process.cpuUsage();
      const t = performance.now();
      const r = await h(event, lambdaContext);
      const wall = performance.now() - t;
      const used = process.cpuUsage(c);
      if ((r?.statusCode ?? 200) !== 200) throw new Error(`handler answered ${r?.statusCode}`);
      return { t, wall, cpu: (used.user + used.system) / 1000 };
    };
    const OPS_IN = ['chat', 'relay', 'get'] as const;
    type OpIn = (typeof OPS_IN)[number];
    const series = () => ({ off: [] as number[], none: [] as number[] });
    const times = { chat: series(), relay: series(), relayWhole: series(), get: series() };
    const cpu = { chat: series(), relay: series(), get: series() };
    const turns = Math.max(ITERATIONS * 4, 100);
    let prompt = 0;
    for (let i = 0; i < WARMUP + turns; i++) {
      // A call per tree, PER_CONVERSATION prompts each; the first prompt of each call not counted.
      const fresh = i % PER_CONVERSATION === 0;
      if (fresh) {
        for (const mode of ['off', 'none'] as const) {
          if (calls[mode]) await desk.hangUp(calls[mode]!.relay);
          calls[mode] = await newCall();
          chats[mode] = (await client.send('POST', '/api/v1/chats', { agent_id: agent.id })).body.data.id;
        }
      }
      for (const mode of (i % 2 ? ['off', 'none'] : ['none', 'off']) as ('off' | 'none')[]) {
        const chat = await invoke(handlers.chat[mode], apiEvent({ method: 'POST', path: `/api/v1/chats/${chats[mode]}/messages`, headers: { 'x-api-key': key, 'content-type': 'application/json' }, pathParameters: { id: chats[mode] }, body: { content: `Question ${i}?` } }));
        const get = await invoke(handlers.get[mode], apiEvent({ path: `/api/v1/agents/${agent.id}`, headers: { 'x-api-key': key }, pathParameters: { id: agent.id } }));
        const call = calls[mode]!;
        firstToken = { connectionId: call.connectionId, at: 0 };
        const before = call.relay.received.length;
        const relay = await invoke(handlers.relay[mode], {
          requestContext: { routeKey: '$default', eventType: 'MESSAGE', connectionId: call.connectionId, requestId: `bench-${++prompt}`, stage: 'local', domainName: 'localhost', apiId: 'local', requestTimeEpoch: Date.now() },
          isBase64Encoded: false,
          body: JSON.stringify({ type: 'prompt', voicePrompt: `Question ${i}?`, lang: 'en-US', last: true }),
        });
        if (!firstToken.at) throw new Error(`the relay prompt (${mode}) posted no text token`);
        const toFirst = firstToken.at - relay.t;
        await call.relay.until(() => call.relay.received.slice(before).some((m) => m.type === 'text' && m.last), 'the reply');
        if (i < WARMUP || fresh) continue;
        times.chat[mode].push(chat.wall);
        cpu.chat[mode].push(chat.cpu);
        times.get[mode].push(get.wall);
        cpu.get[mode].push(get.cpu);
        times.relay[mode].push(toFirst);
        times.relayWhole[mode].push(relay.wall);
        cpu.relay[mode].push(relay.cpu);
      }
    }
    for (const mode of ['off', 'none'] as const) await desk.hangUp(calls[mode]!.relay);
    holder[LOCAL] = port;
    const label: Record<OpIn, string> = {
      chat: 'chat turn (`sendChatMessage` handler, answered whole)',
      relay: 'relay prompt (`$default` handler: to its first token posted; the whole invocation after the slash)',
      get: '`GET /agents/{id}` (`getAgent` handler)',
    };
    const verdicts: string[] = [];
    const rows = OPS_IN.map((op) => {
      const [off, none] = [times[op].off, times[op].none];
      const d = pct(off, 50) - pct(none, 50);
      const dc = mean(cpu[op].off) - mean(cpu[op].none);
      // Paired: the two trees ran in turns, so each block of BLOCK iterations gives one p50 difference.
      const diffs: number[] = [];
      for (let k = 0; k + BLOCK <= off.length; k += BLOCK) diffs.push(pct(off.slice(k, k + BLOCK), 50) - pct(none.slice(k, k + BLOCK), 50));
      const m = mean(diffs);
      const err = 2 * Math.sqrt(mean(diffs.map((x) => (x - m) ** 2)) / Math.max(1, diffs.length - 1));
      const verdict = m + err <= 0.2 ? 'met' : m - err > 0.2 ? '**over the goal**' : 'undecided';
      verdicts.push(`${op === 'get' ? 'getAgent' : op} ${fmt(m)} ± ${err.toFixed(2)} ms over ${diffs.length} blocks (${verdict})`);
      const whole = op === 'relay' ? ` / ${pct(times.relayWhole.none, 50).toFixed(2)} ms` : '';
      const wholeOff = op === 'relay' ? ` / ${pct(times.relayWhole.off, 50).toFixed(2)} ms` : '';
      return `| ${label[op]} | ${pct(none, 50).toFixed(2)} ms${whole} | ${pct(off, 50).toFixed(2)} ms${wholeOff} | ${fmt(d)} ms | ${mean(cpu[op].none).toFixed(3)} ms | ${mean(cpu[op].off).toFixed(3)} ms | ${fmt(dc, 3)} ms |`;
    });
    const l = loadavg();
    return [
      '### Off against none in one process',
      '',
      `\`BENCH_TRACE_PARTS=inproc npx tsx bench/tracing-cost.ts\`. The processes above scatter by more than the 0.2 ms goal, so "off" is also set against "none" inside one process: two temporary copies of shared/ and functions/, one as it is ("off") and one with the telemetry hook modules replaced by the same stubs ("none"), neither the tree the local runtime itself runs (whose modules, serving every other request, run warmer), and each copy's handler invoked directly against the same local runtime, the two taking turns (each first in every other iteration), ${times.chat.off.length} counted iterations each after ${WARMUP} to warm up; tracing off (no OTEL_* setting). An iteration is a chat turn and \`GET /agents/{id}\` (API Gateway events, no HTTP hop) and a relay prompt: the relay's \`$default\` handler invoked with a WebSocket MESSAGE event (a final \`prompt\`) on a call of its tree's own (calls of ${PER_CONVERSATION} prompts from the Twilio stand-in's relay client, whose setup and a first prompt the local runtime's handlers answered through the socket; the first direct prompt of each call not counted), timed to the platform's post of the first \`text\` token (the connections port, wrapped) and to the invocation's end. Wall p50 and this process's CPU time per invocation (mean). Load average when measured: ${l.map((x) => x.toFixed(2)).join(', ')} (1/5/15 min, ${cpus().length} cores).`,
      '',
      '| operation | none, p50 | off, p50 | off − none (p50) | none, CPU | off, CPU | off − none, CPU |',
      '|---|---|---|---|---|---|---|',
      ...rows,
      '',
      `**Off − none, the mean of the paired p50 differences of blocks of ${BLOCK} iterations ± twice its standard error: ${verdicts.join('; ')} (goal ≤ 0.2 ms; "met" needs the mean plus its error within it, "over the goal" the mean less its error beyond it).**`,
      '',
    ].join('\n');
  } finally {
    await stop();
    rmSync(copy, { recursive: true, force: true });
    rmSync(copyOff, { recursive: true, force: true });
  }
}

/** An OTLP/HTTP sink in a process of its own (as the ADOT layer's collector is an extension process beside the function): answers every export at once. */
async function startSinkCollector(): Promise<{ url: string; received: () => Promise<{ n: number; spans: number }>; close: () => void }> {
  const source = `const http = require('node:http'); let n = 0;
    let spans = 0;
    const s = http.createServer((req, res) => { let body = ''; req.on('data', (c) => (body += c)); req.on('end', () => { n++; spans += (body.match(/"spanId"/g) || []).length; res.writeHead(200, { 'content-type': 'application/json' }).end('{}'); }); });
    s.keepAliveTimeout = 60000;
    s.listen(0, '127.0.0.1', () => process.send(s.address().port));
    process.on('message', () => process.send({ n, spans }));`;
  const proc = spawn(process.execPath, ['-e', source], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve) => proc.once('message', (m) => resolve(m as number)));
  return {
    url: `http://127.0.0.1:${port}`,
    received: () => new Promise<{ n: number; spans: number }>((resolve) => (proc.once('message', (m: any) => resolve(m)), proc.send('n'))),
    close: () => void proc.kill(),
  };
}

/**
 * On against off in one process, paired: blocks of iterations with tracing switched on (the
 * standard OTEL_EXPORTER_OTLP_ENDPOINT set, the SDK registered by the next request, as a
 * function's first request does) and off (unset, the SDK shut down: stopTracing), in the order
 * off, on, on, off, so the process's drift weighs on both alike. The processes of the first part
 * scatter by more than the 1.5 ms goal; here every figure comes from one process.
 */
async function onOffInProcess(): Promise<string> {
  const BLOCK = 12;
  const DROP = 2;
  const collector = await startSinkCollector();
  const { client, desk, key, stop } = await startReplyBench();
  // As deployed: a Lambda environment (AWS_EXECUTION_ENV) whose bundle registered the trace export extension at init
  // (shared/telemetry/lambda-extension.ts) with the local Extensions API (shared/local/stack/extensions-api.ts): on,
  // the chat turn is answered, then the extension exports its spans and asks for its next event, and only then does
  // the next iteration start (as Lambda gives the environment its next invocation). Off, the handler is the function's own.
  const saved = { AWS_EXECUTION_ENV: process.env.AWS_EXECUTION_ENV, AWS_LAMBDA_RUNTIME_API: process.env.AWS_LAMBDA_RUNTIME_API };
  const { ExtensionsApi } = await import('../shared/local/stack/extensions-api');
  const runtimeApi = new ExtensionsApi({ name: 'sendChatMessage', handler: 'index.handler' });
  process.env.AWS_LAMBDA_RUNTIME_API = await runtimeApi.listen();
  process.env.AWS_EXECUTION_ENV = 'AWS_Lambda_nodejs22.x';
  try {
    const tracing = await import('../shared/telemetry/tracing');
    const { lambdaHandlers } = await import('../shared/telemetry/lambda-extension');
    const { apiEvent, lambdaContext } = await import('../test/support/events');
    type Handler = (e: unknown, c: unknown) => Promise<{ statusCode: number }>;
    const chatHandler = ((await import('../functions/chats/send-message')) as { handler: Handler }).handler;
    const wrapped = (await lambdaHandlers({ ...process.env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }))(chatHandler);
    if (wrapped === chatHandler) throw new Error('the trace export extension did not register');
    runtimeApi.endInit();
    await runtimeApi.allWaiting(10_000, 'Init');
    let invocations = 0;
    const agent = (await client.send('POST', '/api/v1/agents', { name: 'On and off', begin_message: 'Hello!' })).body.data;
    const wall = { chat: { off: [] as number[], on: [] as number[] }, relay: { off: [] as number[], on: [] as number[] } };
    // Each counted block's p50 per operation, in order: the pairs (off, on) and (on, off) of each four give paired differences.
    const blockP50 = { chat: [] as { mode: 'on' | 'off'; p50: number }[], relay: [] as { mode: 'on' | 'off'; p50: number }[] };
    const cpu = { chat: { off: [] as number[], on: [] as number[] }, relay: { off: [] as number[], on: [] as number[] } };
    let chatId = '';
    let chatTurns = PER_CONVERSATION;
    let call = await desk.call();
    let prompts = 0;
    const set = async (mode: 'on' | 'off') => {
      if (mode === 'on') Object.assign(process.env, { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'bench' });
      else {
        delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
        delete process.env.OTEL_SERVICE_NAME;
        await tracing.stopTracing();
      }
    };
    const blocks = Math.max(4, 4 * Math.round((2 * ITERATIONS) / BLOCK / 4));
    for (let b = 0; b < blocks + 2; b++) {
      // Two blocks to warm up (off, on), then off, on, on, off, …
      const mode = b < 2 ? (b === 0 ? 'off' : 'on') : [ 'off', 'on', 'on', 'off' ][(b - 2) % 4] as 'on' | 'off';
      await set(mode);
      const block = { chat: [] as number[], relay: [] as number[] };
      for (let i = 0; i < BLOCK; i++) {
        if (chatTurns >= PER_CONVERSATION) {
          chatId = (await client.send('POST', '/api/v1/chats', { agent_id: agent.id })).body.data.id;
          chatTurns = 0;
        }
        if (prompts >= PER_CONVERSATION) {
          await desk.hangUp(call.relay);
          call = await desk.call();
          prompts = 0;
        }
        chatTurns++;
        prompts++;
        const requestId = `bench-${++invocations}`;
        if (mode === 'on') runtimeApi.invoke({ requestId, deadlineMs: Date.now() + 30_000, invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:sendChatMessage' });
        let c = process.cpuUsage();
        const t = performance.now();
        // A context of its own per invocation, as Lambda gives: the extension's wrapper marks the one it gets for work
        // after the answer, and a marked context handed to the bare handler would queue work that nothing runs.
        const r = await (mode === 'on' ? wrapped : chatHandler)(apiEvent({ method: 'POST', path: `/api/v1/chats/${chatId}/messages`, headers: { 'x-api-key': key, 'content-type': 'application/json' }, pathParameters: { id: chatId }, body: { content: `Question ${b}.${i}?` } }), { ...lambdaContext, awsRequestId: requestId });
        const chatWall = performance.now() - t;
        const chatCpu = process.cpuUsage(c);
        if (r.statusCode !== 200) throw new Error(`the chat turn answered ${r.statusCode}`);
        // The invocation ends when the extension has exported and asks for its next event.
        if (mode === 'on') await runtimeApi.allWaiting(30_000, 'Invoke');
        c = process.cpuUsage();
        const relayWall = await desk.prompt(call.relay, `Question ${b}.${i}?`);
        const relayCpu = process.cpuUsage(c);
        if (b < 2 || i < DROP) continue;
        wall.chat[mode].push(chatWall);
        cpu.chat[mode].push((chatCpu.user + chatCpu.system) / 1000);
        wall.relay[mode].push(relayWall);
        cpu.relay[mode].push((relayCpu.user + relayCpu.system) / 1000);
        block.chat.push(chatWall);
        block.relay.push(relayWall);
      }
      if (b >= 2) for (const op of ['chat', 'relay'] as const) blockP50[op].push({ mode, p50: pct(block[op], 50) });
    }
    await desk.hangUp(call.relay);
    await set('off');
    const exports = await collector.received();
    const verdicts: string[] = [];
    const rows = (['chat', 'relay'] as const).map((op) => {
      const d = pct(wall[op].on, 50) - pct(wall[op].off, 50);
      const dc = mean(cpu[op].on) - mean(cpu[op].off);
      // Paired: within each off-on-on-off four, the on block's p50 less its neighbouring off block's.
      const diffs: number[] = [];
      for (let k = 0; k + 1 < blockP50[op].length; k += 2) {
        const [a, z] = [blockP50[op][k]!, blockP50[op][k + 1]!];
        diffs.push(a.mode === 'on' ? a.p50 - z.p50 : z.p50 - a.p50);
      }
      const m = mean(diffs);
      const err = 2 * Math.sqrt(mean(diffs.map((x) => (x - m) ** 2)) * diffs.length / Math.max(1, diffs.length - 1) / diffs.length);
      const verdict = m + err <= 1.5 ? 'met' : m - err > 1.5 ? '**over the goal**' : 'undecided';
      verdicts.push(`${op} ${fmt(m)} ± ${err.toFixed(2)} ms over ${diffs.length} pairs of blocks (${verdict})`);
      return `| ${op === 'chat' ? 'chat turn (`sendChatMessage` handler, answered whole)' : 'relay prompt (to the first token)'} | ${pct(wall[op].off, 50).toFixed(2)} ms | ${pct(wall[op].on, 50).toFixed(2)} ms | ${fmt(d)} ms | ${pct(wall[op].off, 90).toFixed(2)} ms | ${pct(wall[op].on, 90).toFixed(2)} ms | ${mean(cpu[op].off).toFixed(3)} ms | ${mean(cpu[op].on).toFixed(3)} ms | ${fmt(dc, 3)} ms |`;
    });
    const l = loadavg();
    return [
      '### On against off in one process',
      '',
      `\`BENCH_TRACE_PARTS=onoff npx tsx bench/tracing-cost.ts\`. One process (the local runtime, DynamoDB Local its child, the stand-in model answering at once), tracing switched on and off in blocks of ${BLOCK} iterations (the standard \`OTEL_EXPORTER_OTLP_ENDPOINT\` set, so the next request registers the SDK, as a function's first request does; unset, and the SDK shut down), in the order off, on, on, off after a block of each to warm up; the first ${DROP} iterations of each block not counted. An iteration is one chat turn (the \`sendChatMessage\` handler invoked directly with an API Gateway event: no HTTP hop) and one relay prompt (through the relay client, to the first token). On, as deployed (\`AWS_EXECUTION_ENV\` set for this part): the handler is the bundle's, wrapped by the trace export extension registered with a local Extensions API; each chat turn is an invocation (its INVOKE event, the answer, then the extension's export and its next request, before the next iteration and outside the timing), so every span is exported (the default batch processor, flushed after each answer) to an OTLP/HTTP sink in a process of its own: ${exports.n} exports of ${exports.spans} spans. The relay's invocations are not wrapped here (their first token comes before any export either way). ${wall.chat.on.length} iterations in each mode. Wall p50 and p90; CPU: this process's per operation, mean (the relay client's included, the same in both modes). Load average when measured: ${l.map((x) => x.toFixed(2)).join(', ')} (1/5/15 min, ${cpus().length} cores).`,
      '',
      '| operation | off, p50 | on, p50 | on − off | off, p90 | on, p90 | off, CPU | on, CPU | on − off, CPU |',
      '|---|---|---|---|---|---|---|---|---|',
      ...rows,
      '',
      `**On − off, the mean of the paired block p50 differences ± twice its standard error: ${verdicts.join('; ')} (goal ≤ 1.5 ms; "met" needs the mean plus its error within it).** With "off against none in one process" (above: nothing measurable) that is what tracing on adds over no tracing code.`,
      '',
    ].join('\n');
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    await runtimeApi.close();
    await stop();
    collector.close();
  }
}

/** The cold start with tracing on: load and first invocation of a function's bundle against the floor's. */
async function cold(): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), 'vap-bench-traced-'));
  const functions = [
    { name: 'getAgent', entry: 'functions/agents/get.ts' },
    { name: 'sendChatMessage', entry: 'functions/chats/send-message.ts' },
  ];
  const built = bundleEntries(functions, { rootDir: root, outDir: join(out, 'fns'), externalAwsSdk: false });
  const floorBuild = bundleEntries([{ name: 'floor', entry: 'bench/cold-floor.ts' }], { rootDir: root, outDir: join(out, 'floor'), externalAwsSdk: false });
  const fileOf = (name: string) => join((name === 'floor' ? floorBuild : built).dirs.get(name)!, 'index.mjs');
  const baseEnv = { ...process.env, TABLE_NAME: 'bench', BUCKET_NAME: 'bench', AWS_REGION: 'us-east-1', LOG_LEVEL: 'SILENT', NODE_OPTIONS: '' };
  for (const k of Object.keys(baseEnv)) if (k.startsWith('OTEL_')) delete baseEnv[k as keyof typeof baseEnv];
  // A request without a key: the whole stack runs (and with tracing on, the SDK loads and a server span is made) and answers 401 before any table read.
  const event = { version: '2.0', routeKey: 'GET /api/v1/agents/{id}', rawPath: '/api/v1/agents/x', rawQueryString: '', headers: {}, pathParameters: { id: 'x' }, isBase64Encoded: false, requestContext: { requestId: 'cold', http: { method: 'GET', path: '/api/v1/agents/x' } } };
  const script = `const t=performance.now(); const m=await import(${'FILE'}); const l=performance.now()-t; await m.handler(${JSON.stringify(event)}, { awsRequestId: 'cold', functionName: 'bench', getRemainingTimeInMillis: () => 10000 }); console.log(l, performance.now()-t); process.exit(0)`;
  // As in a Lambda environment: AWS_EXECUTION_ENV set, and a Runtime API (a fresh local Extensions API per load, served
  // by this process as Lambda serves it from outside the function's) with which a traced bundle registers its trace
  // export extension during its module load (lib/bundle.ts); tracing off, nothing registers.
  const { ExtensionsApi } = await import('../shared/local/stack/extensions-api');
  const run = promisify(execFile);
  const once = async (name: string, traced: boolean) => {
    const runtime = new ExtensionsApi({ name, handler: 'index.handler' });
    const lambdaEnv = { ...baseEnv, AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x', AWS_LAMBDA_RUNTIME_API: await runtime.listen() };
    const env = traced ? { ...lambdaEnv, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_SERVICE_NAME: 'bench' } : lambdaEnv;
    try {
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script.replace('FILE', JSON.stringify(fileOf(name)))], { cwd: out, env });
      if (traced && runtime.count !== 1) throw new Error(`${name}: the traced bundle did not register its extension`);
      if (!traced && runtime.count !== 0) throw new Error(`${name}: an extension registered with tracing off`);
      return String(stdout).trim().split(' ').map(Number) as [number, number];
    } finally {
      await runtime.close();
    }
  };
  const loads = new Map<string, { load: number[]; first: number[] }>();
  const keyOf = (name: string, traced: boolean) => `${name}:${traced ? 'on' : 'off'}`;
  const ratios = new Map<string, number[]>();
  for (let round = 0; round < COLD_ROUNDS; round++) {
    const items = functions.flatMap((f) => [{ name: f.name, traced: false }, { name: f.name, traced: true }]);
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [items[i], items[j]] = [items[j]!, items[i]!];
    }
    // The floor before and after every two loads: each load against the mean of its two neighbouring floors.
    let before = await once('floor', false);
    for (let i = 0; i < items.length; i += 2) {
      const pair: Array<{ name: string; traced: boolean; times: [number, number] }> = [];
      for (const it of items.slice(i, i + 2)) pair.push({ ...it, times: await once(it.name, it.traced) });
      const after = await once('floor', false);
      for (const floorTimes of [before, after]) {
        const e = loads.get('floor') ?? { load: [], first: [] };
        e.load.push(floorTimes[0]);
        e.first.push(floorTimes[1]);
        loads.set('floor', e);
      }
      for (const it of pair) {
        const key = keyOf(it.name, it.traced);
        const e = loads.get(key) ?? { load: [], first: [] };
        e.load.push(it.times[0]);
        e.first.push(it.times[1]);
        loads.set(key, e);
        const r = ratios.get(key) ?? [];
        r.push(it.times[1] / ((before[1] + after[1]) / 2));
        ratios.set(key, r);
      }
      before = after;
    }
  }
  const load = loadavg();
  const floor = loads.get('floor')!;
  const rows = functions.flatMap((f) => [false, true].map((traced) => {
    const key = keyOf(f.name, traced);
    const e = loads.get(key)!;
    return `| ${f.name} | ${traced ? 'on' : 'off'} | ${pct(e.load, 50).toFixed(1)} ms | ${pct(e.first, 50).toFixed(1)} ms | ${pct(ratios.get(key)!, 50).toFixed(2)}× |`;
  }));
  const added = functions.map((f) => pct(loads.get(keyOf(f.name, true))!.first, 50) - pct(loads.get(keyOf(f.name, false))!.first, 50));
  return [
    '### The cold start of a traced function',
    '',
    `\`BENCH_TRACE_PARTS=cold npx tsx bench/tracing-cost.ts\`. Each bundle as the stack builds it (lib/bundle.ts, SDK bundled, minified, split), loaded with \`await import()\` in a fresh Node process and invoked once with a request without a key (the whole middleware stack runs and answers 401 before any table read; with tracing on, the module load registers the trace export extension with a Runtime API served by the bench's process, as in a Lambda environment, and that first invocation imports the OpenTelemetry chunk, registers the SDK and makes the request's server span), ${COLD_ROUNDS} rounds in a random order, the floor (bench/cold-floor.ts: a handler that only creates a DynamoDB document client, invoked once too) before and after every two loads; "× floor" is the median over a function's loads of its time to the first answer against the mean of its two neighbouring floors'. Load average when measured: ${load.map((l) => l.toFixed(2)).join(', ')} (1/5/15 min, ${cpus().length} cores).`,
    '',
    '| function | tracing | module load (p50) | load + first answer (p50) | × floor |',
    '|---|---|---|---|---|',
    `| floor | off | ${pct(floor.load, 50).toFixed(1)} ms | ${pct(floor.first, 50).toFixed(1)} ms | 1.00× |`,
    ...rows,
    '',
    `Tracing on adds ${added.map((x, i) => `${x.toFixed(1)} ms (${functions[i]!.name})`).join(', ')} to the first answer (p50): the SDK's chunk loaded and registered once per environment, and the extension's registration (one loopback request during the module load). Nothing of OpenTelemetry loads at start.`,
    '',
  ].join('\n');
}

export async function tracingCostBenchmark(): Promise<string> {
  const sections = ['## (tracing) What tracing costs', ''];
  if (PARTS.has('turns')) sections.push(await turns());
  if (PARTS.has('inproc')) sections.push(await inProcess());
  if (PARTS.has('onoff')) sections.push(await onOffInProcess());
  if (PARTS.has('cold')) sections.push(await cold());
  return sections.join('\n');
}

if (process.argv[2] === 'child') {
  child(process.argv[3] as Mode).then((result) => {
    console.log(JSON.stringify(result));
    process.exit(0);
  }, (err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else runAsScript(module, tracingCostBenchmark);

/**
 * Concurrency limits (issue 44, "Measured"), two parts:
 *
 * cost — what the admission check adds to `POST /api/v1/calls` and to an inbound call's answer
 *   (`POST /api/v1/telephony/twilio/inbound`, Twilio's incoming-call webhook), against the same
 *   request without it. One child process runs the whole local runtime with
 *   `--require bench/concurrency-stubs/register.cjs` (BENCH_CONCURRENCY_STUBS=slots): the platform
 *   imports shared/domain/concurrency/slots.ts through a stub that is the real module, except that
 *   the bench can switch the admission off between requests (no counter increment, no slot item in
 *   the creating transaction; such a call's end frees nothing). So both sides run the same code in
 *   the same process and DynamoDB Local, pair by pair, the order alternating; the queues are let run
 *   dry after each request, so no earlier call's background work (dialing, carrier events, its end
 *   and the slot's release) overlaps a timed request. The organization's ceiling is set far above what the
 *   run reaches, so the check always admits: what is timed is its cost, never a refusal.
 *
 * exact — 200 call starts racing for 20 slots across 4 processes of the local runtime, under
 *   LOCAL_FAULTS. The parent starts one DynamoDB Local and its table; each worker process runs the
 *   whole platform (shared/local/platform.ts: HTTP server, handlers, in-process queues, its own
 *   faults) against that table (BENCH_CONCURRENCY_STUBS=dynamo hands startDynamoLocal the parent's
 *   endpoint). The starts go out in waves, spread over the workers, half plain (429 at the limit),
 *   half `"queue": true` (202 waiting; one in four of those with a 3 s `queue_timeout_seconds`),
 *   each retried with its Idempotency-Key through 5xx and in-progress 409s as a client would. The
 *   simulated carrier rings every call out (ring 40 s, queue delays × 0.05: 2 s of real time), so
 *   slots free and waiting calls are placed. Every second one worker runs the call-recovery job (as
 *   its schedule would). While it runs, the parent polls GET /concurrency (the counter, through the
 *   API), counts the slot items (a consistent Query) and counts live calls from the call items
 *   themselves (status not ended and not waiting); at the end it reads the raw counter, the slot
 *   and queue entries, and every call's outcome.
 *
 *   npx tsx bench/concurrency.ts              # both parts, ~2-3 min on 2 cores
 *   BENCH_CONC_PARTS=exact npx tsx bench/concurrency.ts
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { GetCommand, QueryCommand, DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { keys } from '../shared/db/keys';
import { startDynamoLocal } from '../shared/local/dynamo';
import { LOCAL_TABLE_NAME, startPlatform } from '../shared/local/platform';
import { ensureTable, localDynamoClient } from '../shared/local/table';
import { ringInbound, runAsScript } from './support';

const PARTS = new Set((process.env.BENCH_CONC_PARTS ?? 'cost,exact').split(','));
const root = join(__dirname, '..');
const REGISTER = join(__dirname, 'concurrency-stubs', 'register.cjs');

// cost
const ROUNDS = Number(process.env.BENCH_CONC_ROUNDS ?? 15);
const PAIRS = Number(process.env.BENCH_CONC_PAIRS ?? 40);
const WARMUP = Number(process.env.BENCH_CONC_WARMUP ?? 20);
const GOAL_MS = 3;
const SID = 'AC000000000000000000000000000c0044';
const TOKEN = 'bench-concurrency';

// exact
const PROCESSES = Number(process.env.BENCH_CONC_PROCESSES ?? 4);
const STARTS = Number(process.env.BENCH_CONC_STARTS ?? 200);
const LIMIT = Number(process.env.BENCH_CONC_LIMIT ?? 20);
const WAVES = Number(process.env.BENCH_CONC_WAVES ?? 4);
const WAVE_GAP_MS = 1_500;
/** The fault test's plan (test/faults/concurrency.test.ts); each worker draws with a seed of its own. */
const FAULTS = process.env.BENCH_CONC_FAULTS ?? 'on,dynamo.conflict=0.1,dynamo.throttle=0.02,sqs.redeliver=0.1,backoff=0.1';
/** Queue delays and visibility timeouts × this: a call rings out after RING_MS × TIME_SCALE of real time. */
const TIME_SCALE = 0.05;
const RING_MS = 40_000;
const MAX_CALL_MS = 60_000;
const SHORT_TIMEOUT_S = 3;
const LONG_TIMEOUT_S = 600;
const SWEEP_EVERY_MS = 1_000;
/** Nothing changed for this long, no call waits and no dial or carrier event is pending: what is left only the sweep ends, at its due time. */
const STALL_MS = 2_000;
const SETTLE_MS = Number(process.env.BENCH_CONC_SETTLE_MS ?? 120_000);
/** shared/domain/calls/service.ts RECOVERY_MARGIN_MS: a never-ended call is due ring + max + this after its creation. */
const RECOVERY_MARGIN_MS = 5 * 60_000;
/** Log lines of the local runtime that report a failure (as test/support/platform.ts reads them). */
const FAILURE_LINE = /\) failed \[|local HTTP server error|: batch of \d+ failed|moved to the dead-letter list|scheduled job .* failed/;

/** Nearest-rank percentile. */
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.max(0, Math.ceil((p / 100) * xs.length) - 1))]!;
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const signed = (n: number) => `${n >= 0 ? '+' : '−'}${Math.abs(n).toFixed(2)}`;

/** The machine's 1-minute load average every 5 s while the bench runs (the figures are read against it). */
function watchLoad() {
  const samples: number[] = [loadavg()[0]!];
  const timer = setInterval(() => samples.push(loadavg()[0]!), 5_000).unref();
  return {
    stop: () => {
      clearInterval(timer);
      samples.push(loadavg()[0]!);
      return `load average (1 min) ${samples[0]!.toFixed(2)} at the start, ${samples.at(-1)!.toFixed(2)} at the end, at most ${Math.max(...samples).toFixed(2)} (every 5 s); 1/5/15 min at the end ${loadavg().map((l) => l.toFixed(2)).join(', ')}; ${cpus().length} cores`;
    },
  };
}

/** The child's environment: no faults, no tracing, the logger silent, the given stubs. */
function childEnv(stubs: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', NODE_OPTIONS: '', LOG_LEVEL: 'SILENT', BENCH_CONCURRENCY_STUBS: stubs, ...extra };
  for (const k of Object.keys(env)) if (k.startsWith('OTEL_') || k === 'LOCAL_FAULTS') delete env[k];
  return env;
}

const CHILD_FLAGS = ['--import', 'tsx', '--require', REGISTER];
const redirects = () => (globalThis as { __concurrencyStubRedirects?: () => Record<string, number> }).__concurrencyStubRedirects?.() ?? {};

// ---------------------------------------------------------------------------------------------
// cost: the admission check on POST /calls and an inbound answer, with and without it
// ---------------------------------------------------------------------------------------------

type Mode = 'with' | 'none';
/** The two requests, and (`transaction`) POST /calls's creating transaction alone, sent through the platform's store. */
type Op = 'calls' | 'inbound' | 'transaction';
const MODES: Mode[] = ['with', 'none'];
const OPS: Op[] = ['calls', 'inbound'];
/** Transaction pairs timed after the requests (cheap: no HTTP, no call's course). */
const TRANSACTIONS = Number(process.env.BENCH_CONC_TRANSACTIONS ?? 200);

interface Sample {
  op: Op;
  mode: Mode;
  /** -1 while warming up. */
  round: number;
  ms: number;
  /** DynamoDB requests made while it ran, and the items of its first write transaction (the one creating the call). */
  requests: number;
  items: number;
}

interface CostResult {
  cost: Sample[];
  redirects: Record<string, number>;
  skipped: number;
  /** After the run: slot items and the raw counter's total (only the admitted inbound calls and transactions' calls still live). */
  slots: number;
  counterTotal: number;
  admittedLive: number;
}

interface BenchAdmission {
  on: boolean;
  skipped: Set<string>;
}
const admission = () => ((globalThis as { __benchAdmission?: BenchAdmission }).__benchAdmission ??= { on: true, skipped: new Set() });

/** The child process of the cost part: the local runtime with the admission stub, the timed pairs. */
async function costChild(): Promise<CostResult> {
  const state = admission();
  const key = generateApiKey();
  const platform = await startPlatform({
    port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, voice: false, queueTimeScale: 0.01, log: () => undefined,
    env: {
      LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000', CONCURRENCY_CEILING: '1000000',
      TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN, VOICE_RUNTIME_URL: 'wss://voice.example.test/stream',
    },
  });
  try {
    const { db, tableName } = await import('../shared/db/client');
    const orgId = platform.keys[0]!.organizationId;
    const meter = { requests: 0, items: -1 };
    db().middlewareStack.add(
      (next) => async (args) => {
        meter.requests++;
        const items = (args.input as { TransactItems?: unknown[] }).TransactItems;
        if (Array.isArray(items) && meter.items < 0) meter.items = items.length;
        return next(args);
      },
      { step: 'initialize', name: 'benchConcurrencyMeter' },
    );
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${platform.url}${path}`, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      const json = (await res.json()) as any;
      if (!json.success) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json.data;
    };
    const agent = (await api('POST', '/api/v1/agents', { name: 'Admission', prompt: 'Be brief.', begin_message: 'Hello.' })).id as string;
    const [offer] = await api('GET', '/api/v1/phone-numbers/available?area_code=212&limit=1');
    const number = (await api('POST', '/api/v1/phone-numbers/buy', { phone_number: offer.phone_number, price: offer.price, inbound_agent_id: agent })).phone_number as string;

    let dialed = 0;
    /** POST /calls to a busy test number (it ends 2 s after dialing: 20 ms here): 200 with the call. */
    const postCall = async () => {
      const body = JSON.stringify({ agent_id: agent, from_phone_number: number, to_phone_number: `+1415555${100 + (dialed++ % 900)}8` });
      const t0 = performance.now();
      const res = await fetch(`${platform.url}/api/v1/calls`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body });
      const text = await res.text();
      const ms = performance.now() - t0;
      if (res.status !== 200) throw new Error(`POST /calls answered ${res.status}: ${text}`);
      return ms;
    };
    const ring = async () => (await ringInbound(platform.url, { accountSid: SID, authToken: TOKEN }, number)).ms;

    const samples: Sample[] = [];
    let admittedInbound = 0;
    for (let i = 0; i < WARMUP + ROUNDS * PAIRS; i++) {
      // Each op first in every other iteration, each mode first in every other pair.
      const ops = Math.floor(i / 2) % 2 ? OPS : [...OPS].reverse();
      for (const op of ops) {
        for (const mode of i % 2 ? MODES : [...MODES].reverse()) {
          state.on = mode === 'with';
          const requests = meter.requests;
          meter.items = -1;
          const ms = op === 'calls' ? await postCall() : await ring();
          if (op === 'inbound' && mode === 'with') admittedInbound++;
          samples.push({ op, mode, round: i < WARMUP ? -1 : Math.floor((i - WARMUP) / PAIRS), ms, requests: meter.requests - requests, items: meter.items });
          // The call's course (dial, carrier events, end, analysis) done before the next request.
          await platform.queue.waitForIdle(30_000);
          state.on = true;
        }
      }
    }
    // POST /calls's creating transaction alone, as createCall builds it (newCallWrites: the call, its agent index
    // entry, the calls counter, and with the admission the counter's conditional increment and the slot), the
    // two sides in turns. These calls never dial or end: only their items are written.
    const { newCallWrites } = await import('../shared/domain/calls/service');
    const { getItem, putNew, transact } = await import('../shared/db/store');
    const { collections } = await import('../shared/db/keys');
    const agentItem = (await getItem<any>(keys.agent(orgId, agent)))!;
    const numberItem = (await getItem<{ phone_number_id: string }>(keys.numberClaim(number)))!;
    const phone = (await getItem<any>(keys.phoneNumber(orgId, numberItem.phone_number_id)))!;
    let admittedTransactions = 0;
    for (let i = 0; i < WARMUP + TRANSACTIONS; i++) {
      for (const mode of i % 2 ? MODES : [...MODES].reverse()) {
        state.on = mode === 'with';
        const { item, writes, slot } = newCallWrites(orgId, {
          agentId: agent, agent: agentItem, number: phone, direction: 'outbound', from: number, to: '+14155551008',
          contactId: null, campaignId: null, metadata: {}, dynamicVariables: {}, status: 'queued',
        });
        const t0 = performance.now();
        await transact([putNew({ ...item }), ...writes, ...slot], [{ orgId, collection: collections.calls, delta: 1 }]);
        const ms = performance.now() - t0;
        if (mode === 'with') admittedTransactions++;
        samples.push({ op: 'transaction', mode, round: i < WARMUP ? -1 : Math.floor(((i - WARMUP) * ROUNDS) / TRANSACTIONS), ms, requests: 1, items: 2 + writes.length + slot.length });
      }
      state.on = true;
    }
    // The check behind the A/B: only the admitted inbound calls and transactions (never ended here) hold slots and count.
    const slots = await db().send(new QueryCommand({
      TableName: tableName(), KeyConditionExpression: 'pk = :pk AND begins_with(sk, :slot)', ExpressionAttributeValues: { ':pk': keys.partition(orgId), ':slot': 'SLOT#' }, Select: 'COUNT', ConsistentRead: true,
    }));
    const counter = await db().send(new GetCommand({ TableName: tableName(), Key: keys.concurrency(orgId), ConsistentRead: true }));
    return { cost: samples, redirects: redirects(), skipped: state.skipped.size, slots: slots.Count ?? 0, counterTotal: Number(counter.Item?.total ?? 0), admittedLive: admittedInbound + admittedTransactions };
  } finally {
    await platform.stop();
  }
}

function runCostChild(): Promise<CostResult> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [...CHILD_FLAGS, __filename, 'cost-child'], { cwd: root, env: childEnv('slots'), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stdout.on('data', (c: Buffer) => (out += c));
    proc.stderr.on('data', (c: Buffer) => (err += c));
    proc.on('exit', (code) => {
      const line = out.split('\n').find((l) => l.startsWith('{"cost"'));
      if (code !== 0 || !line) return reject(new Error(`the cost run failed (${code}): ${err.slice(-3000)}`));
      resolve(JSON.parse(line) as CostResult);
    });
  });
}

/** A 95% bootstrap interval of pct(a, p) − pct(b, p), each side resampled on its own. */
function bootstrap(a: number[], b: number[], p: number, n = 2000): [number, number] {
  const draw = (xs: number[]) => Array.from(xs, () => xs[Math.floor(Math.random() * xs.length)]!);
  const diffs = Array.from({ length: n }, () => pct(draw(a), p) - pct(draw(b), p));
  return [pct(diffs, 2.5), pct(diffs, 97.5)];
}

async function cost(): Promise<string> {
  const load = watchLoad();
  const result = await runCostChild();
  const loadLine = load.stop();
  const noneRequests = result.cost.filter((s) => s.mode === 'none').length;
  // The A/B is only an A/B if the stub was reached and took the admission out of every "none" request.
  if (!result.redirects['admission-slots']) throw new Error('no import reached bench/concurrency-stubs/admission-slots.ts: the "none" side ran the admission');
  if (result.skipped !== noneRequests) throw new Error(`${result.skipped} calls were created without admission, ${noneRequests} "none" requests were made`);
  if (result.slots !== result.admittedLive || result.counterTotal !== result.admittedLive) {
    throw new Error(`after the run ${result.slots} slot items and a counter of ${result.counterTotal}, but ${result.admittedLive} admitted calls live`);
  }
  const timed = (op: Op, mode: Mode) => result.cost.filter((s) => s.op === op && s.mode === mode && s.round >= 0);
  const wall = (op: Op, mode: Mode) => timed(op, mode).map((s) => s.ms);
  const label: Record<Op, string> = {
    calls: '`POST /api/v1/calls` (outbound, a busy test number)',
    inbound: '`POST /api/v1/telephony/twilio/inbound` (an incoming call answered)',
    transaction: 'POST /calls\'s creating transaction alone (`transact` in process, no HTTP)',
  };
  const modeLabel: Record<Mode, string> = { with: 'with the admission check', none: 'without it' };
  const verdicts: string[] = [];
  const rows = [...OPS, 'transaction' as const].flatMap((op) => {
    const [a, b] = [wall(op, 'with'), wall(op, 'none')];
    const d50 = pct(a, 50) - pct(b, 50);
    const d90 = pct(a, 90) - pct(b, 90);
    const [lo50, hi50] = bootstrap(a, b, 50);
    const [lo90, hi90] = bootstrap(a, b, 90);
    const perRound = Array.from({ length: ROUNDS }, (_, r) => {
      const of = (mode: Mode) => timed(op, mode).filter((s) => s.round === r).map((s) => s.ms);
      return pct(of('with'), 50) - pct(of('none'), 50);
    });
    const verdict = hi50 <= GOAL_MS ? 'met' : lo50 > GOAL_MS ? '**over the goal**' : 'undecided';
    if (op !== 'transaction') verdicts.push(`${op === 'calls' ? 'POST /calls' : 'the inbound answer'} ${signed(d50)} ms (95% interval ${signed(lo50)} … ${signed(hi50)} ms): ${verdict}`);
    const dbOf = (mode: Mode) => `${mean(timed(op, mode).map((s) => s.requests)).toFixed(1)} requests; ${mean(timed(op, mode).map((s) => s.items)).toFixed(1)} items in the creating transaction`;
    return [
      ...MODES.map((mode) => `| ${label[op]} | ${modeLabel[mode]} | ${a.length} | ${pct(mode === 'with' ? a : b, 50).toFixed(2)} ms | ${pct(mode === 'with' ? a : b, 90).toFixed(2)} ms | ${dbOf(mode)} |`),
      `| | **added** | | **${signed(d50)} ms** (${signed(lo50)} … ${signed(hi50)}) | ${signed(d90)} ms (${signed(lo90)} … ${signed(hi90)}) | per round, added at p50: ${perRound.map((d) => signed(d)).join(', ')} ms |`,
    ];
  });
  return [
    '### The admission check\'s cost',
    '',
    `\`BENCH_CONC_PARTS=cost npx tsx bench/concurrency.ts\` (or \`BENCH_SECTIONS=concurrency npm run bench\`). One process runs the whole local runtime (DynamoDB Local in memory, the handlers over loopback HTTP, the simulated carrier) with \`--require bench/concurrency-stubs/register.cjs\`, which resolves shared/domain/concurrency/slots.ts to a stub that is the real module except that the bench switches the admission off for a request: no \`ADD total 1\` conditioned on the limit and no slot put in the transaction that creates the call (and such a call's end frees nothing). Both sides therefore run the same code in the same process against the same table and differ only by those two writes; the bench checks that every "without" call skipped them (${result.skipped} of ${noneRequests}) and that at the end the slot items and the counter (${result.slots}, ${result.counterTotal}) are exactly the admitted calls still live (the incoming calls and the transaction rows' calls, which never end here). The organization's ceiling is 1,000,000, so the check always admits: what is timed is its cost, never a refusal. ${ROUNDS} rounds of ${PAIRS} iterations after ${WARMUP} to warm up; an iteration is one pair of each request, with and without the check in turns (each side first in every other pair); the queues run dry after every request, so no earlier call's background course (dialing, carrier events, its end and the slot's release) overlaps a timed request (a call's own dial job starts in this process as soon as it is queued, at the end of its request, alike on both sides). Outbound calls go to a busy test number; incoming calls to a number whose agent answers, a new carrier call id each, signed as Twilio signs. Times are the client's (fetch, keep-alive), from the request to the answer's last byte. Then ${TRANSACTIONS} pairs (after ${WARMUP}) of POST /calls's creating transaction alone, built as createCall builds it (calls/service.ts \`newCallWrites\`: the call, its agent index entry, the calls counter, and with the admission the counter's conditional update and the slot) and sent through the platform's store, timed around \`transact\`. "DynamoDB" is per request, mean: the requests the process made while it ran and the items of its first write transaction, the one that creates the call. Intervals: 95% bootstrap of the difference of the percentiles (2,000 resamples); "per round": the p50 difference in each fifth of the run. ${loadLine}.`,
    '',
    '| request | admission | n | p50 | p90 | DynamoDB |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    `**Added at p50 (goal ≤ ${GOAL_MS} ms on the local runtime): ${verdicts.join('; ')}.** "Met" needs the interval's top within the goal, "over the goal" its bottom beyond it; "undecided": the run's noise is wider than the goal (a quieter machine or more rounds, BENCH_CONC_ROUNDS, narrow it). The check adds no request: it is two more items in the transaction that creates the call (the counter's conditional update, the slot's put), whose own difference the transaction row measures without the HTTP hop, the middleware and the other reads around it.`,
    '',
  ].join('\n');
}

// ---------------------------------------------------------------------------------------------
// exact: 200 starts racing for 20 slots across 4 processes, under faults
// ---------------------------------------------------------------------------------------------

type ToWorker = { type: 'sweep'; id: number; aheadMs?: number } | { type: 'pending'; id: number } | { type: 'stop'; id: number };
type QueueCounts = { redelivered: number; failed: number; deadLetters: number };
type FromWorker =
  | { type: 'ready'; url: string; orgId: string; faults?: string }
  | { type: 'swept'; id: number; error?: string; ended?: number }
  | { type: 'pending'; id: number; pending: number }
  | { type: 'stopped'; id: number; injected: Record<string, number>; dials: number; failures: string[]; queues: QueueCounts };

/** The queues whose jobs move calls and free slots: dialing and the carrier's events. */
const CALL_QUEUES = ['call-place', 'call-events'];

/** A worker process: the whole local runtime on the parent's table, answering sweeps and its stop. */
async function workerMain(index: number): Promise<void> {
  const logs: string[] = [];
  const seeded = /(^|,)seed=/.test(FAULTS) ? FAULTS : `${FAULTS},seed=44-${index}`;
  const platform = await startPlatform({
    port: 0, inMemory: true, apiKeys: [process.env.BENCH_CONC_KEY!], tickSeconds: 24 * 3600, voice: false, queueTimeScale: TIME_SCALE, faults: seeded,
    log: (line) => logs.push(line),
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000', CONCURRENCY_CEILING: String(LIMIT) },
  });
  const { runCallRecovery } = await import('../shared/domain/calls/recovery');
  const { simulatedDials } = await import('../shared/adapters/telephony/simulated');
  const reply = (m: FromWorker) => process.send!(m);
  process.on('message', (raw: unknown) => {
    const m = raw as ToWorker;
    if (m.type === 'sweep') {
      // The job as its schedule runs it; aheadMs: the sweep as it would run that much later (the fault test's way to reach what is due later).
      const run: Promise<{ ended: number } | undefined> = m.aheadMs ? runCallRecovery({ now: new Date(Date.now() + m.aheadMs), lookbackHours: 1 }) : platform.scheduler.runNow('call-recovery').then(() => undefined);
      run.then(
        (s) => reply({ type: 'swept', id: m.id, ended: s?.ended }),
        (err: Error) => reply({ type: 'swept', id: m.id, error: err.message }),
      );
      return;
    }
    const stats = Object.entries(platform.queue.stats()).filter(([name]) => CALL_QUEUES.includes(name)).map(([, q]) => q);
    if (m.type === 'pending') return reply({ type: 'pending', id: m.id, pending: stats.reduce((n, q) => n + q.visible + q.invisible + q.inFlight, 0) });
    const injected = platform.faults?.injected() ?? {};
    const dials = simulatedDials();
    const queues = { redelivered: 0, failed: 0, deadLetters: 0 };
    for (const q of stats) for (const k of Object.keys(queues) as (keyof QueueCounts)[]) queues[k] += q[k];
    void platform.stop().then(() => {
      reply({ type: 'stopped', id: m.id, injected, dials, failures: logs.filter((l) => FAILURE_LINE.test(l)), queues });
      setTimeout(() => process.exit(0), 50);
    });
  });
  reply({ type: 'ready', url: platform.url, orgId: platform.keys[0]!.organizationId, faults: platform.faults?.describe() });
}

interface Worker {
  index: number;
  url: string;
  orgId: string;
  faults?: string;
  ask(m: ToWorker): Promise<FromWorker>;
  kill(): void;
}

/** What the workers' API handlers failed with (their "unhandled error" log lines, by error name and message), counted. */
const unhandled = new Map<string, number>();

function startWorker(index: number, endpoint: string, key: string): Promise<Worker> {
  // The workers log at ERROR (their unhandled errors are counted); BENCH_CONC_WORKER_LOGS=<dir> keeps each one's output in <dir>/worker-<n>.log.
  const logDir = process.env.BENCH_CONC_WORKER_LOGS;
  const proc: ChildProcess = fork(__filename, ['worker', String(index)], {
    cwd: root, execArgv: CHILD_FLAGS, stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    env: childEnv('dynamo', { BENCH_SHARED_DYNAMODB_ENDPOINT: endpoint, BENCH_CONC_KEY: key, LOG_LEVEL: 'ERROR' }),
  });
  let tail = '';
  const keep = (c: Buffer) => {
    tail = `${tail}${c}`.slice(-3000);
    if (logDir) appendFileSync(join(logDir, `worker-${index}.log`), c);
  };
  // The logger writes errors to stderr: the lines of both are read, each stream's own.
  const reader = () => {
    let partial = '';
    return (c: Buffer) => {
      keep(c);
      const lines = `${partial}${c}`.split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (!line.includes('"unhandled error"')) continue;
        try {
          const error = (JSON.parse(line) as { error?: { name?: string; message?: string } }).error;
          const what = `${error?.name ?? '?'} (${(error?.message ?? '').replace(/\s+/g, ' ').slice(0, 70)})`;
          unhandled.set(what, (unhandled.get(what) ?? 0) + 1);
        } catch {
          // not a log line of ours
        }
      }
    };
  };
  proc.stdout?.on('data', reader());
  proc.stderr?.on('data', reader());
  const waiting = new Map<number, (m: FromWorker) => void>();
  let nextId = 1;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker ${index} not ready after 180 s: ${tail}`)), 180_000);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`worker ${index} exited (${code}): ${tail}`));
      for (const done of waiting.values()) done({ type: 'swept', id: 0, error: `worker ${index} exited` });
    });
    proc.on('message', (raw) => {
      const m = raw as FromWorker;
      if (m.type !== 'ready') return waiting.get(m.id)?.(m);
      clearTimeout(timer);
      resolve({
        index, url: m.url, orgId: m.orgId, faults: m.faults,
        ask: (msg) => new Promise((done) => {
          const id = nextId++;
          waiting.set(id, (answer) => {
            waiting.delete(id);
            done(answer);
          });
          proc.send({ ...msg, id });
        }),
        kill: () => proc.kill('SIGKILL'),
      });
    });
  });
}

/** One call start as a client makes it: its Idempotency-Key kept through retries of 5xx and in-progress 409s. */
interface Start {
  i: number;
  queue: boolean;
  timeoutSeconds?: number;
  statuses: number[];
  /** Each 5xx's status, error code and request id (to look up in BENCH_CONC_WORKER_LOGS). */
  errors: string[];
  id?: string;
  queuePosition?: number;
  /** From sending the first try to the final answer. */
  ms?: number;
}

async function send(url: string, key: string, method: string, path: string, body?: unknown, statuses: number[] = [], errors: string[] = []): Promise<{ status: number; body: any }> {
  const idempotency: Record<string, string> = method === 'POST' ? { 'idempotency-key': uuidv7() } : {};
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(`${url}${path}`, { method, headers: { 'x-api-key': key, 'content-type': 'application/json', ...idempotency }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json().catch(() => undefined)) as any;
    statuses.push(res.status);
    if (res.status >= 500) errors.push(`${res.status} ${json?.error?.code ?? '?'} ${json?.error?.details?.request_id ?? res.headers.get('x-request-id') ?? ''}`.trim());
    const retry = res.status >= 500 || (res.status === 409 && /in progress/.test(JSON.stringify(json)));
    if (!retry || attempt >= 8) return { status: res.status, body: json };
    await sleep(50 * attempt);
  }
}

interface CallRow {
  id: string;
  status: string;
  waiting_until?: string;
  disconnection_reason?: string | null;
  provider_call_id?: string;
  error_message?: string | null;
}

async function exact(): Promise<string> {
  const load = watchLoad();
  const dynamo = await startDynamoLocal({});
  const workers: Worker[] = [];
  try {
    await ensureTable(dynamo.endpoint, LOCAL_TABLE_NAME);
    const key = generateApiKey();
    // The first worker makes the organization and its key; the others find them.
    workers.push(await startWorker(0, dynamo.endpoint, key));
    workers.push(...(await Promise.all(Array.from({ length: PROCESSES - 1 }, (_, i) => startWorker(i + 1, dynamo.endpoint, key)))));
    const orgId = workers[0]!.orgId;
    if (workers.some((w) => w.orgId !== orgId)) throw new Error('the workers provisioned different organizations');
    const doc = DynamoDBDocumentClient.from(localDynamoClient(dynamo.endpoint));
    const pk = keys.partition(orgId);
    const count = async (prefix: string) => (await doc.send(new QueryCommand({ TableName: LOCAL_TABLE_NAME, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)', ExpressionAttributeValues: { ':pk': pk, ':p': prefix }, Select: 'COUNT', ConsistentRead: true }))).Count ?? 0;
    const counter = async () => ((await doc.send(new GetCommand({ TableName: LOCAL_TABLE_NAME, Key: keys.concurrency(orgId), ConsistentRead: true }))).Item ?? {}) as { total?: number; outbound?: number; queued?: number };
    const readCalls = async () => {
      const rows: CallRow[] = [];
      let start: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(new QueryCommand({
          TableName: LOCAL_TABLE_NAME, KeyConditionExpression: 'pk = :pk AND begins_with(sk, :p)', FilterExpression: 'entity = :call',
          ProjectionExpression: 'id, #st, waiting_until, disconnection_reason, provider_call_id, error_message', ExpressionAttributeNames: { '#st': 'status' },
          ExpressionAttributeValues: { ':pk': pk, ':p': 'CALL#', ':call': 'CALL' }, ConsistentRead: true, ExclusiveStartKey: start,
        }));
        rows.push(...((page.Items ?? []) as CallRow[]));
        start = page.LastEvaluatedKey;
      } while (start);
      return rows;
    };
    const isLive = (c: CallRow) => c.status !== 'ended' && !c.waiting_until;

    // Setup through the first worker (retried through the faults as any client would).
    const at = (i: number) => workers[i % workers.length]!.url;
    const [offer] = (await send(at(0), key, 'GET', '/api/v1/phone-numbers/available?area_code=212&limit=1')).body.data;
    const bought = await send(at(0), key, 'POST', '/api/v1/phone-numbers/buy', { phone_number: offer.phone_number, price: offer.price });
    const agentMade = await send(at(0), key, 'POST', '/api/v1/agents', { name: 'Racing caller', ring_duration_ms: RING_MS, max_call_duration_ms: MAX_CALL_MS });
    if (bought.status !== 200 || agentMade.status !== 200) throw new Error(`setup failed: ${JSON.stringify([bought.body, agentMade.body])}`);
    const from = bought.body.data.phone_number as string;
    const agent = agentMade.body.data.id as string;
    const limits = (await send(at(0), key, 'GET', '/api/v1/concurrency')).body.data;
    if (limits.limit !== LIMIT) throw new Error(`the organization's limit is ${limits.limit}, not ${LIMIT}`);

    // The watch: the counter through the API, the slot items, and (every fifth look) live calls from the call items.
    const peak = { counter: 0, slots: 0, live: 0, minTotal: 0, looks: 0, callLooks: 0 };
    let watching = true;
    const watch = (async () => {
      for (let n = 0; watching; n++) {
        const [view, slots, raw, calls] = await Promise.all([
          fetch(`${at(n)}/api/v1/concurrency`, { headers: { 'x-api-key': key } }).then(async (r) => (r.status === 200 ? ((await r.json()) as any).data : undefined)).catch(() => undefined),
          count('SLOT#'),
          counter(),
          n % 5 === 0 ? readCalls() : undefined,
        ]);
        peak.looks++;
        if (view) peak.counter = Math.max(peak.counter, view.in_progress.total);
        peak.slots = Math.max(peak.slots, slots);
        peak.minTotal = Math.min(peak.minTotal, raw.total ?? 0, raw.queued ?? 0);
        if (calls) {
          peak.callLooks++;
          peak.live = Math.max(peak.live, calls.filter(isLive).length);
        }
        await sleep(10);
      }
    })();
    // The schedule: call-recovery every SWEEP_EVERY_MS, the workers taking turns.
    const sweeps = { scheduled: 0, ahead: 0, errors: 0, aheadEnded: 0 };
    let sweeping = true;
    const sweeper = (async () => {
      for (let n = 0; sweeping; n++) {
        const r = await workers[n % workers.length]!.ask({ type: 'sweep', id: 0 });
        sweeps.scheduled++;
        if (r.type === 'swept' && r.error) sweeps.errors++;
        await sleep(SWEEP_EVERY_MS);
      }
    })();

    // The race: WAVES waves of starts, each spread over the workers, plain and "queue": true in turns.
    const t0 = performance.now();
    const starts: Start[] = [];
    const perWave = Math.ceil(STARTS / WAVES);
    const inFlight: Promise<void>[] = [];
    for (let w = 0; w < WAVES; w++) {
      for (let i = w * perWave; i < Math.min(STARTS, (w + 1) * perWave); i++) {
        const queue = i % 2 === 1;
        const s: Start = { i, queue, statuses: [], errors: [], ...(queue ? { timeoutSeconds: i % 8 === 3 ? SHORT_TIMEOUT_S : LONG_TIMEOUT_S } : {}) };
        starts.push(s);
        const body = { agent_id: agent, from_phone_number: from, to_phone_number: `+1415555${100 + (i % 900)}7`, ...(queue ? { queue: true, queue_timeout_seconds: s.timeoutSeconds } : {}) };
        const sent = performance.now();
        inFlight.push(send(at(i), key, 'POST', '/api/v1/calls', body, s.statuses, s.errors).then((r) => {
          s.ms = performance.now() - sent;
          s.id = r.body?.data?.id;
          s.queuePosition = r.body?.data?.queue_position;
        }));
      }
      if (w < WAVES - 1) await sleep(WAVE_GAP_MS);
    }
    await Promise.all(inFlight);
    const answeredMs = performance.now() - t0;

    // Until every call has ended and the counter, the slots and the queue are empty. A call still live when no
    // process has a dial or a carrier event pending for any call (its placement's send was lost after its slot
    // was taken) is one only the sweep ends, at its due time: the sweep is then run as at that time.
    const pendingCallJobs = async () => (await Promise.all(workers.map((w) => w.ask({ type: 'pending', id: 0 })))).reduce((n, m) => n + (m.type === 'pending' ? m.pending : 1), 0);
    let last = '';
    let changed = Date.now();
    let settled = false;
    const ahead = RING_MS + MAX_CALL_MS + RECOVERY_MARGIN_MS + 60_000;
    const deadline = Date.now() + SETTLE_MS;
    const stuck: string[] = [];
    for (let n = 0; ; n++) {
      const [calls, c, slots, waits] = await Promise.all([readCalls(), counter(), count('SLOT#'), count('CALLWAIT#')]);
      const open = calls.filter((call) => call.status !== 'ended');
      if (!open.length && !c.total && !c.queued && !slots && !waits) {
        settled = true;
        break;
      }
      const state = JSON.stringify([open.map((call) => `${call.id}:${call.status}`), c, slots, waits]);
      if (state !== last) {
        last = state;
        changed = Date.now();
      } else if (open.length && !open.some((call) => call.waiting_until) && Date.now() - changed > STALL_MS && (await pendingCallJobs()) === 0) {
        stuck.push(...open.map((call) => `${call.status}${call.provider_call_id ? ' (dialed)' : ''}`));
        const r = await workers[n % workers.length]!.ask({ type: 'sweep', id: 0, aheadMs: ahead });
        sweeps.ahead++;
        if (r.type === 'swept') sweeps.aheadEnded += r.ended ?? 0;
        changed = Date.now();
      }
      if (Date.now() > deadline) break;
      await sleep(250);
    }
    const settledMs = performance.now() - t0;
    watching = false;
    sweeping = false;
    await Promise.all([watch, sweeper]);
    // The last look once no dial or carrier event is pending anywhere (a redelivered one that freed a slot twice would show).
    for (const until = Date.now() + 30_000; Date.now() < until && (await pendingCallJobs()) > 0; ) await sleep(250);
    const [calls, endCounter, endSlots, endWaits] = await Promise.all([readCalls(), counter(), count('SLOT#'), count('CALLWAIT#')]);
    const stopped = (await Promise.all(workers.map((w) => w.ask({ type: 'stop', id: 0 })))).filter((m): m is Extract<FromWorker, { type: 'stopped' }> => m.type === 'stopped');
    const faultPlan = (workers[0]?.faults ?? FAULTS).replace(/ \(seed [^)]*\)/, '');
    workers.splice(0);
    doc.destroy();
    const loadLine = load.stop();

    // What the clients were told, and what became of every call in the table.
    const finalStatus = (s: Start) => s.statuses.at(-1)!;
    const by = <T>(xs: T[], f: (x: T) => string) => xs.reduce<Record<string, number>>((acc, x) => ({ ...acc, [f(x)]: (acc[f(x)] ?? 0) + 1 }), {});
    const list = (r: Record<string, number>) => Object.entries(r).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
    const byId = new Map(calls.map((c) => [c.id, c]));
    const told = new Set(starts.flatMap((s) => (s.id ? [s.id] : [])));
    const orphans = calls.filter((c) => !told.has(c.id));
    const direct = starts.filter((s) => finalStatus(s) === 200);
    const waited = starts.filter((s) => finalStatus(s) === 202);
    const refused = starts.filter((s) => finalStatus(s) === 429);
    const other = starts.filter((s) => ![200, 202, 429].includes(finalStatus(s)));
    const retried = starts.filter((s) => s.statuses.length > 1);
    const reasonOf = (s: Start) => byId.get(s.id!)?.disconnection_reason ?? byId.get(s.id!)?.status ?? 'missing';
    const waitedOutcome = by(waited, (s) => (reasonOf(s) === 'queue_timeout' ? 'timed out' : reasonOf(s) === 'no_answer' ? 'placed (rang out)' : `${reasonOf(s)}`));
    const leftWaiting = calls.filter((c) => c.waiting_until && c.status !== 'ended').length;
    const injected: Record<string, number> = {};
    for (const s of stopped) for (const [k, v] of Object.entries(s.injected)) if (v) injected[k] = (injected[k] ?? 0) + v;
    const dials = stopped.reduce((n, s) => n + s.dials, 0);
    const dialed = calls.filter((c) => c.provider_call_id).length;
    const failures = stopped.flatMap((s) => s.failures);
    const queues = { redelivered: 0, failed: 0, deadLetters: 0 };
    for (const s of stopped) for (const k of Object.keys(queues) as (keyof QueueCounts)[]) queues[k] += s.queues[k];
    const ok = (b: boolean) => (b ? 'met' : '**not met**');
    const leaked = (endCounter.total ?? 0) !== 0 || endSlots !== 0;
    const peakOk = peak.counter <= LIMIT && peak.slots <= LIMIT && peak.live <= LIMIT;
    const placedOrTimedOut = leftWaiting === 0 && endWaits === 0 && !(endCounter.queued ?? 0) && waited.every((s) => byId.get(s.id!)?.status === 'ended');

    return [
      '### Exactness: 200 starts racing for 20 slots across 4 processes, under faults',
      '',
      `\`BENCH_CONC_PARTS=exact npx tsx bench/concurrency.ts\`. One DynamoDB Local (in memory) and its table, started by the bench; ${PROCESSES} worker processes, each the whole local runtime (shared/local/platform.ts: its HTTP server and handlers, its in-process queues and their jobs, the simulated carrier) with faults of its own (\`LOCAL_FAULTS\` as the fault test sets it, seeded per process, 44-0 … 44-${PROCESSES - 1}: ${faultPlan}), all against that one table (\`--require bench/concurrency-stubs/register.cjs\` hands each runtime's startDynamoLocal the bench's endpoint; the platform's code runs unchanged, its queue delays × ${TIME_SCALE} and its schedule driven by the bench). The organization's limit: ${LIMIT} (the ceiling). ${STARTS} \`POST /calls\` in ${WAVES} waves ${WAVE_GAP_MS / 1000} s apart, each wave sent at once and spread over the ${PROCESSES} processes; every other one \`"queue": true\` (one in four of those with \`queue_timeout_seconds: ${SHORT_TIMEOUT_S}\`, the rest ${LONG_TIMEOUT_S}); each retried with its Idempotency-Key through 5xx and in-progress 409s (up to 8 tries), as a client would. Every call rings out (a test number ending in 7, ring ${RING_MS / 1000} s, queue delays × ${TIME_SCALE}: about ${(RING_MS * TIME_SCALE) / 1000} s of real time), so its end frees its slot and places waiting calls. The call-recovery job runs every ${SWEEP_EVERY_MS / 1000} s, the processes taking turns. Calls left live that nothing would end before their due time (ring + max duration + 5 min) are ended by the sweep run as at that time (${sweeps.ahead} such sweeps). While it ran, ${peak.looks} looks (about every ${(settledMs / Math.max(1, peak.looks)).toFixed(0)} ms): \`GET /concurrency\` (the counter, through the API, the processes in turns), a consistent Query counting the slot items, and every fifth look (${peak.callLooks}) the call items themselves, live = not ended and not waiting. ${loadLine}.`,
      '',
      '| check | result | goal |',
      '|---|---|---|',
      `| peak live calls: \`GET /concurrency\` \`in_progress.total\` | ${peak.counter} | ≤ ${LIMIT}: ${ok(peak.counter <= LIMIT)} |`,
      `| peak live calls: slot items | ${peak.slots} | ≤ ${LIMIT}: ${ok(peak.slots <= LIMIT)} |`,
      `| peak live calls: call items not ended and not waiting | ${peak.live} | ≤ ${LIMIT}: ${ok(peak.live <= LIMIT)} |`,
      `| lowest raw counter seen (\`total\`, \`queued\`; below 0 is a slot or a place freed twice) | ${peak.minTotal} | ≥ 0: ${ok(peak.minTotal >= 0)} |`,
      `| at the end: counter \`total\` / \`outbound\` / \`queued\` (raw item), slot items, queue entries | ${endCounter.total ?? 0} / ${endCounter.outbound ?? 0} / ${endCounter.queued ?? 0}, ${endSlots}, ${endWaits} | all 0 (leaked 0): ${ok(!leaked && !(endCounter.queued ?? 0) && !endWaits)} |`,
      `| calls not ended at the end | ${calls.filter((c) => c.status !== 'ended').length} of ${calls.length} | 0 |`,
      `| waiting calls (202) placed or timed out, none left waiting | ${list(waitedOutcome)} of ${waited.length} | ${ok(placedOrTimedOut)} |`,
      '',
      `**Peak ≤ ${LIMIT}: ${ok(peakOk)}; leaked 0: ${ok(!leaked)}; every queued call placed or timed out: ${ok(placedOrTimedOut)}${settled ? '' : ` (not settled within ${SETTLE_MS / 1000} s)`}.** Answers (after retries): ${direct.length} × 200 (a slot at once), ${waited.length} × 202 (waiting), ${refused.length} × 429 \`CONCURRENCY_LIMIT\`${other.length ? `, ${list(by(other, (s) => String(finalStatus(s))))} (given up after 8 tries)` : ''}; ${retried.length} starts needed more than one try${retried.length ? ` (${list(by(starts.flatMap((s) => s.errors), (e) => e.split(' ').slice(0, 2).join(' ')))})` : ''}; a start's answer took ${(pct(starts.map((s) => s.ms!), 50) / 1000).toFixed(1)} s at p50, ${(pct(starts.map((s) => s.ms!), 90) / 1000).toFixed(1)} s at p90, ${(Math.max(...starts.map((s) => s.ms!)) / 1000).toFixed(1)} s at most. Outcomes: plain calls admitted ${list(by(direct, reasonOf))}; waiting calls' first places in the queue 1 … ${Math.max(0, ...waited.map((s) => s.queuePosition ?? 0))}. The API's 5xx as the workers logged them: ${list(Object.fromEntries(unhandled))}. Calls in the table ${calls.length}, of which ${orphans.length} no client was told of${orphans.length ? ` (a request that wrote its call, answered a 5xx, and was retried, making another: ${list(by(orphans, (c) => c.disconnection_reason ?? c.status))}; those that rang out were dialed)` : ''}. The carrier was asked to dial ${dials} times for ${dialed} calls with a carrier id. All ${STARTS} answered in ${(answeredMs / 1000).toFixed(1)} s; everything ended and freed ${(settledMs / 1000).toFixed(1)} s after the first start. Faults injected (all processes): ${list(injected)}. Dial and carrier-event jobs: ${queues.redelivered} delivered again after success, ${queues.failed} deliveries failed, ${queues.deadLetters} dead letters. Sweeps: ${sweeps.scheduled} scheduled (${failures.filter((f) => /scheduled job call-recovery failed/.test(f)).length + sweeps.errors} failed); ${sweeps.ahead} run as at the due time, for ${stuck.length ? list(by(stuck, (x) => x)) : 'no'} calls nothing else would end, ending ${sweeps.aheadEnded}. The runtimes logged ${failures.length} failures${failures.length ? `, e.g. ${failures.slice(0, 3).map((f) => `"${f.replace(/\s+/g, ' ').slice(0, 160)}"`).join('; ')}` : ''}.`,
      '',
    ].join('\n');
  } finally {
    for (const w of workers) w.kill();
    await dynamo.stop();
  }
}

export async function concurrencyBenchmark(): Promise<string> {
  const sections = ['## (concurrency) Concurrency limits: the admission check\'s cost and exactness across processes (issue 44)', ''];
  if (PARTS.has('cost')) sections.push(await cost());
  if (PARTS.has('exact')) sections.push(await exact());
  return sections.join('\n');
}

if (process.argv[2] === 'cost-child') {
  costChild().then((result) => {
    console.log(JSON.stringify(result));
    process.exit(0);
  }, (err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else if (process.argv[2] === 'worker') {
  workerMain(Number(process.argv[3])).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
} else runAsScript(module, concurrencyBenchmark);

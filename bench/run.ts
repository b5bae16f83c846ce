/**
 * `npm run bench`: measures what matters and writes docs/benchmarks.md. Every figure is a
 * ratio against a baseline measured in the same run, on the same machine, so the numbers
 * travel between machines better than absolute times do.
 *
 *  (a) overhead: GET /api/v1/agents/{id} through the local runtime against the same GetItem
 *      made directly on the same DynamoDB Local, interleaved, ratio of medians;
 *  (b) cold start: each function's bytes loaded at start and module load time against a floor (a
 *      handler that only creates a DynamoDB document client), built the same way;
 *  (c) cost: consumed DynamoDB capacity per operation (ReturnConsumedCapacity), in dollars per
 *      million calls at on-demand prices;
 *  (d) webhooks: capacity per event with one and with three endpoints, and the time from a
 *      state change to the receiver's 200 on the local runtime.
 *  (e) campaigns at scale (bench/campaigns.ts): contacts added per second through the API against a raw
 *      BatchWriteItem of the same items, dispatch latency at 1,000 and 100,000 contacts, units per dial, peak memory.
 *  (layers) GET /agents/{id} layer by layer against the raw GetItem (bench/agent-get-layers.ts);
 *  (accuracy) each reply-latency boundary against a stand-in model's known delay and the client's own time
 *      (bench/latency-accuracy.ts). What tracing costs is bench/tracing-cost.ts, run on its own (many processes).
 *  (concurrency) the admission check's cost on POST /calls and an inbound answer, and 200 starts racing for 20 slots
 *      across 4 processes under faults (bench/concurrency.ts).
 */
import { execFile, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPlatform } from '../shared/local/platform';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { operations, fallbackEntry, websocketRoutes } from '../shared/http/registry';
import { jobs } from '../shared/jobs/registry';
import { bundleEntries, DEFAULT_EXTERNAL_AWS_SDK } from '../lib/bundle';
import { db, tableName } from '../shared/db/client';
import { keys, RATE_PREFIX } from '../shared/db/keys';
import { claimLease, countRequest } from '../shared/db/rate-counter';
import { resetConfig } from '../shared/config';
import { counterExpiry, windowAt } from '../shared/domain/rate-limit/window';
import { GetCommand } from '@aws-sdk/lib-dynamodb';

const root = join(__dirname, '..');
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 400);
/** Which sections to run (default all): BENCH_SECTIONS=overhead,cost,cold,rag,webhooks,campaigns. */
const ALL_SECTIONS = 'overhead,cost,cold,rag,webhooks,campaigns,chat,widget,webaudio,voice,relay,analytics,agenttests,streaming,routing,handoff,transfer,handoffvoice,layers,accuracy,concurrency';
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? ALL_SECTIONS).split(','));

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const ms = (n: number) => `${n.toFixed(2)} ms`;

type Capacity = { read: number; write: number; rateLimit: number; readRequests: number; itemsWritten: number };
const consumed: Capacity = { read: 0, write: 0, rateLimit: 0, readRequests: 0, itemsWritten: 0 };

/** Asks DynamoDB for the capacity of every call this process makes, and adds it up. */
function meterCapacity() {
  db().middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as Record<string, unknown>;
      input.ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const cc = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      // TOTAL reports `CapacityUnits` only; the command says whether they were read or write units.
      const isWrite = /Put|Update|Delete|TransactWrite|BatchWrite/.test(String((args as { input: unknown; commandName?: string }).commandName ?? context.commandName));
      if (process.env.BENCH_DEBUG) console.error(context.commandName, JSON.stringify(cc));
      const isRateLimit = String((input.Key as { pk?: unknown } | undefined)?.pk ?? '').startsWith(RATE_PREFIX);
      // Requests and items as well as units (the conversation goals count reads and written items).
      if (!isRateLimit) {
        if (!isWrite) consumed.readRequests++;
        else consumed.itemsWritten += Array.isArray(input.TransactItems) ? input.TransactItems.length : Array.isArray((input.RequestItems as Record<string, unknown[]> | undefined)?.[tableName()]) ? (input.RequestItems as Record<string, unknown[]>)[tableName()]!.length : 1;
      }
      for (const c of (Array.isArray(cc) ? cc : cc ? [cc] : []) as { CapacityUnits?: number }[]) {
        if (isRateLimit) consumed.rateLimit += c.CapacityUnits ?? 0;
        if (isWrite) consumed.write += c.CapacityUnits ?? 0;
        else consumed.read += c.CapacityUnits ?? 0;
      }
      return out;
    },
    { step: 'initialize', name: 'benchCapacityMeter' },
  );
}

/** Rate-limit counter writes (UpdateItem on RATE# items) this process has made. */
let rateWrites = 0;
function countRateWrites() {
  db().middlewareStack.add(
    (next, context) => async (args) => {
      const pk = String(((args.input as { Key?: { pk?: unknown } }).Key)?.pk ?? '');
      if (/Update/.test(String(context.commandName)) && pk.startsWith(RATE_PREFIX)) rateWrites++;
      return next(args);
    },
    { step: 'initialize', name: 'benchRateWrites' },
  );
}

type LimiterMode = 'request' | 'lease';
/** Switches the running platform's limiter (its handlers run in this process and read RATE_LIMIT_MODE through config()). */
function useLimiter(mode: LimiterMode) {
  process.env.RATE_LIMIT_MODE = mode;
  resetConfig();
}

async function overhead(url: string, key: string, orgId: string, dynamoEndpoint: string) {
  countRateWrites();
  const agent = await (await fetch(`${url}/api/v1/agents`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench' }) })).json() as { data: { id: string } };
  const id = agent.data.id;
  const k = keys.agent(orgId, id);
  // The caller runs in its own process, as callers do: the server's event loop serves only requests.
  // The two limiters take turns (old, new, old, new) so the machine's drift hits both alike.
  const rounds: LimiterMode[] = ['request', 'lease', 'request', 'lease'];
  const runs: Record<LimiterMode, { apiTimes: number[]; rawTimes: number[]; healthTimes: number[]; writes: number; requests: number }> = {
    request: { apiTimes: [], rawTimes: [], healthTimes: [], writes: 0, requests: 0 },
    lease: { apiTimes: [], rawTimes: [], healthTimes: [], writes: 0, requests: 0 },
  };
  for (const mode of rounds) {
    useLimiter(mode);
    const args = { url, key, endpoint: dynamoEndpoint, table: tableName(), pk: k.pk, sk: k.sk, path: `/api/v1/agents/${id}`, iterations: Math.ceil(ITERATIONS / 2), warmup: 50 };
    const writesBefore = rateWrites;
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--import', 'tsx', join(__dirname, 'overhead-client.ts'), JSON.stringify(args)], { cwd: root, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } }, (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      );
    });
    const run = JSON.parse(out) as { apiTimes: number[]; rawTimes: number[]; healthTimes: number[] };
    runs[mode].apiTimes.push(...run.apiTimes);
    runs[mode].rawTimes.push(...run.rawTimes);
    runs[mode].healthTimes.push(...run.healthTimes);
    runs[mode].writes += rateWrites - writesBefore;
    // Authenticated requests of the run: the warm-up and measured GETs (health needs no key).
    runs[mode].requests += args.warmup + args.iterations;
  }
  const ratio = (mode: LimiterMode) => median(runs[mode].apiTimes) / median(runs[mode].rawTimes);

  // The same comparison without the HTTP hop: the deployed function's handler invoked directly
  // with an API Gateway event, against the GetItem on the same client, to show what the
  // middleware stack itself costs with each limiter.
  const { handler } = (await import('../functions/agents/get')) as { handler: (e: unknown, c: unknown) => Promise<unknown> };
  const { apiEvent, lambdaContext } = await import('../test/support/events');
  const handlerTimes: Record<LimiterMode, number[]> = { request: [], lease: [] };
  const directTimes: number[] = [];
  const rateTimes: number[] = [];
  const claimTimes: number[] = [];
  for (let i = 0; i < ITERATIONS + 50; i++) {
    const timed = async (fn: () => Promise<unknown>) => {
      const t = performance.now();
      await fn();
      return performance.now() - t;
    };
    const event = () => apiEvent({ path: `/api/v1/agents/${id}`, headers: { 'x-api-key': key }, pathParameters: { id } });
    const order: LimiterMode[] = i % 2 ? ['request', 'lease'] : ['lease', 'request'];
    const h: Partial<Record<LimiterMode, number>> = {};
    for (const mode of order) {
      useLimiter(mode);
      h[mode] = await timed(() => handler(event(), lambdaContext));
    }
    const d = await timed(() => db().send(new GetCommand({ TableName: tableName(), Key: k, ConsistentRead: true })));
    // Each limiter's own write, alone: per request (old), per lease (new).
    const window = windowAt(Date.now());
    const r = await timed(() => countRequest({ keyId: 'bench-rate', window: window.index, limit: 1e9, expiresAt: counterExpiry(window) }));
    const c = await timed(() => claimLease({ keyId: 'bench-lease', window: window.index, limit: 1e9, size: 12, expiresAt: counterExpiry(window) }));
    if (i >= 50) {
      handlerTimes.request.push(h.request!);
      handlerTimes.lease.push(h.lease!);
      directTimes.push(d);
      rateTimes.push(r);
      claimTimes.push(c);
    }
  }
  useLimiter('lease');
  const handlerRatio = (mode: LimiterMode) => median(handlerTimes[mode]) / median(directTimes);
  const perRequest = (mode: LimiterMode) => (runs[mode].writes / runs[mode].requests).toFixed(mode === 'lease' ? 4 : 2);
  const pairs = Math.ceil(ITERATIONS / 2) * 2;
  return [
    '## (a) API overhead: GET an agent against the raw GetItem',
    '',
    `For each rate limiter, ${pairs} interleaved pairs (two runs of ${pairs / 2}, the limiters taking turns: per request, leases, per request, leases) after 50 warm-up pairs per run, from a separate client process with one keep-alive connection each, against the same DynamoDB Local and the same item. "Per request" is the limiter before leases (\`RATE_LIMIT_MODE=request\`: one conditional \`UpdateItem\` awaited before every operation); "leases" is the default (docs/api.md, "Rate limits").`,
    '',
    '| path | median | p95 |',
    '|---|---|---|',
    ...(['request', 'lease'] as LimiterMode[]).flatMap((mode) => [
      `| raw \`GetItem\` (document client), ${mode === 'request' ? 'per-request' : 'lease'} runs | ${ms(median(runs[mode].rawTimes))} | ${ms(pct(runs[mode].rawTimes, 95))} |`,
      `| \`GET /api/v1/agents/{id}\` over HTTP through the local runtime, **${mode === 'request' ? 'per-request limiter' : 'leases'}** | ${ms(median(runs[mode].apiTimes))} | ${ms(pct(runs[mode].apiTimes, 95))} |`,
    ]),
    `| \`GET /api/v1/health\` over HTTP (the hop and the middleware, no dependency) | ${ms(median([...runs.request.healthTimes, ...runs.lease.healthTimes]))} | ${ms(pct([...runs.request.healthTimes, ...runs.lease.healthTimes], 95))} |`,
    '',
    `**Ratio of medians: ${ratio('request').toFixed(2)}× with the per-request limiter, ${ratio('lease').toFixed(2)}× with leases** (target ≤ 1.3×). Rate-limit writes per authenticated request in these runs: ${perRequest('request')} per request, ${perRequest('lease')} with leases (the bench key's limit is 10⁸ a minute, so its slices are large; at the default 1200 a busy process claims 12, 24, 48, 96, then 120 tokens at a time: at most one write per 10 requests, fewer as the slices grow). The API path adds an HTTP round trip, the API Gateway event, the middleware stack (auth from the in-memory key cache, rate limit, validation, envelope) and JSON serialization to the same single \`GetItem\`.`,
    '',
    'Where the difference goes — the handler invoked in process with an API Gateway event (no HTTP), each limiter in turn, against the GetItem on the same client:',
    '',
    '| path | median |',
    '|---|---|',
    `| raw \`GetItem\` | ${ms(median(directTimes))} |`,
    `| \`functions/agents/get.ts\` handler, whole middleware stack, per-request limiter | ${ms(median(handlerTimes.request))} |`,
    `| \`functions/agents/get.ts\` handler, whole middleware stack, leases | ${ms(median(handlerTimes.lease))} |`,
    `| the per-request limiter's conditional \`UpdateItem\` alone (one per authenticated request) | ${ms(median(rateTimes))} |`,
    `| a lease claim alone (one conditional \`UpdateItem\` per slice, in the background) | ${ms(median(claimTimes))} |`,
    '',
    `**Handler ratio: ${handlerRatio('request').toFixed(2)}× with the per-request limiter, ${handlerRatio('lease').toFixed(2)}× with leases.** The per-request limiter awaits one conditional \`UpdateItem\` (${(median(rateTimes) / median(directTimes)).toFixed(2)}× a GetItem) before the operation runs, so an authenticated GET paid two DynamoDB round trips instead of one; with leases a request spends a token from memory and the claims run in the background, so the GET pays one. The HTTP hop with the whole middleware stack costs ${ms(median([...runs.request.healthTimes, ...runs.lease.healthTimes]))} (the health row above). The rest of the gap in the first ratio appears only when three processes (the caller, the runtime and DynamoDB Local's JVM) take turns on this machine's ${cpus().length} cores for every API call, against two for the raw call; in AWS the hop is API Gateway's own latency.`,
    '',
  ].join('\n');
}

/** Where the time goes, from the profiles behind (b) (docs/operations.md, "Bundles and cold starts"). */
const COLD_GAP = [
  'Where the time above the floor goes (esbuild metafiles and `node --cpu-prof` of functions against the floor): mostly V8',
  'compiling the bytes a function loads at start, then zod building schemas. Three changes brought the functions close to it.',
  'Split per function, what a function reaches only through a dynamic `import()` (the phone rules, the S3 and SQS clients, KMS,',
  'Secrets Manager, the crawler\'s HTML parsers, the SDK\'s lazily loaded credential providers) is a chunk Node does not read',
  'until its path runs, which is why "at start" is smaller than "total". Schemas are declared lazily',
  '(shared/domain/common/lazy.ts): a function builds, at load, only the schemas its own operation validates, where it used to',
  'build every request and response schema of its area (5–10 ms of CPU). What remains above the floor is zod itself and the',
  'first use of each kind of schema (1–2 ms), Middy and the middleware, for a few functions libraries their operation needs',
  'on every request (luxon for dates in a zone, more of the SDK for transactions), and the files a function reads at start:',
  'Node pays about 0.3 ms for each, and code a function shares with its lazily loaded modules is split into a chunk per set',
  'of them (the chat turns read 29–30 files, the floor 10). The Powertools logger loads beside the start (shared/logger.ts).',
  'On a busy shared machine the wall-clock ratios of nearly identical bundles spread widely; the CPU-time cross-check is the',
  'steadier figure.',
].join(' ');

/** Goals of issue 12, against the floor: every API function at most 1.5×, the median at most 1.2×. */
const COLD_GOAL_WORST = 1.5;
const COLD_GOAL_MEDIAN = 1.2;

/**
 * (b) Cold start, as a new user would meet it: every function's bundle built as the stack builds
 * it, loaded with `await import()` in a fresh Node process, BENCH_COLD_RUNS rounds (default 21),
 * against the floor in the same run. Every round loads every bundle once in a shuffled order,
 * with the floor before every FLOOR_EVERY loads. One load of the same file varies by ±30 % from
 * process to process even on a quiet machine here, and the machine drifts over seconds (a load's
 * time correlates with its neighbouring floor loads'), so each function's ratio is the median of
 * its loads' ratios to the local floor (the median of the four floor loads around each). The
 * functions are also built and loaded with the AWS SDK the other way (bundled vs external), in a
 * third of the rounds: the measurement behind lib/bundle.ts's `DEFAULT_EXTERNAL_AWS_SDK`.
 */
function coldStart() {
  const runs = Math.max(1, Number(process.env.BENCH_COLD_RUNS ?? 21));
  const otherRuns = Math.max(1, Math.ceil(runs / 3));
  /** A floor load before every this many function loads (each function is compared with the floors around it). */
  const FLOOR_EVERY = 3;
  const out = mkdtempSync(join(tmpdir(), 'vap-bench-bundles-'));
  const api = [...operations.map((o) => ({ name: o.operationId, entry: o.entry })), { name: 'fallback', entry: fallbackEntry }, ...websocketRoutes.map((r) => ({ name: r.name, entry: r.entry }))];
  const jobEntries = jobs.map((j) => ({ name: `job-${j.name}`, entry: j.entry }));
  const functions = [...api, ...jobEntries];
  const modes = { external: true, bundled: false } as const;
  type Mode = keyof typeof modes;
  const stackMode: Mode = DEFAULT_EXTERNAL_AWS_SDK ? 'external' : 'bundled';
  // The floor goes through the same bundleEntries as the functions, so it is split like them (the SDK's lazily
  // loaded credential providers in chunks); it is built on its own, as a user's one-function project would be.
  const built = (Object.keys(modes) as Mode[]).flatMap((mode) => [
    { mode, build: bundleEntries(functions, { rootDir: root, outDir: join(out, mode), externalAwsSdk: modes[mode] }) },
    { mode, build: bundleEntries([{ name: 'floor', entry: 'bench/cold-floor.ts' }], { rootDir: root, outDir: join(out, `${mode}-floor`), externalAwsSdk: modes[mode] }) },
  ]);
  const bundleOf = (mode: Mode, name: string) => built.find((b) => b.mode === mode && b.build.dirs.has(name))!.build;
  // External bundles import @aws-sdk/* as the runtime provides it: let them resolve it from our node_modules.
  for (const dir of ['external', 'external-floor']) execFileSync('ln', ['-s', join(root, 'node_modules'), join(out, dir, 'node_modules')]);

  const env = { ...process.env, TABLE_NAME: 'bench', BUCKET_NAME: 'bench', AWS_REGION: 'us-east-1', LOG_LEVEL: 'SILENT', NODE_OPTIONS: '' };
  // Wall time is the figure; the process's CPU time for the same import is printed too, a
  // cross-check that other processes on a shared machine disturb much less.
  const loadOnce = (file: string, flags: string[] = []) =>
    String(
      execFileSync(process.execPath, [...flags, '--input-type=module', '-e', `const c=process.cpuUsage(); const t=performance.now(); await import(${JSON.stringify(file)}); const w=performance.now()-t; const u=process.cpuUsage(c); console.log(w, (u.user+u.system)/1000)`], { cwd: out, env }),
    ).trim().split(' ').map(Number) as [number, number];
  // Each load in the order it ran: a function's load is compared with the floor loads just before
  // and after it (the machine drifts over seconds: a function's time correlates with its
  // neighbouring floors', 0.25–0.6 here, so the ratio to the local floor is steadier).
  const timeline: { key: string; wall: number; cpu: number }[] = [];
  type LoadJob = { mode: Mode; name: string; key: string; flags?: string[] };
  const loadsOf = (mode: Mode): LoadJob[] => functions.map((e) => ({ mode, name: e.name, key: `${mode}:${e.name}` }));
  const otherMode: Mode = stackMode === 'external' ? 'bundled' : 'external';
  const floorLoad = (mode: Mode): LoadJob => ({ mode, name: 'floor', key: `${mode}:floor` });
  // SOURCE_MAPS=true runs the functions with NODE_OPTIONS=--enable-source-maps (lib/stack.ts): what that adds, on the floor and one function.
  const SOURCE_MAPPED = 'getAgent';
  const mapped: LoadJob[] = ['floor', SOURCE_MAPPED].map((name) => ({ mode: stackMode, name, key: `maps:${name}`, flags: ['--enable-source-maps'] }));
  for (let round = 0; round < runs; round++) {
    // Fisher–Yates with Math.random: each round a new order, so no bundle always follows a heavy one.
    const shuffled = [...loadsOf(stackMode), ...(round < otherRuns ? [...loadsOf(otherMode), floorLoad(otherMode), ...mapped] : [])];
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    // The stack's floor before every FLOOR_EVERY loads and at the end of the round.
    const order = shuffled.flatMap((item, i) => (i % FLOOR_EVERY === 0 ? [floorLoad(stackMode), item] : [item]));
    order.push(floorLoad(stackMode));
    for (const item of order) {
      const [wall, cpu] = loadOnce(join(bundleOf(item.mode, item.name).dirs.get(item.name)!, 'index.mjs'), item.flags);
      timeline.push({ key: item.key, wall, cpu });
    }
  }
  // Per key, its loads' ratios to the local floor: the median of the two stack-floor loads before
  // and the two after it. A median, not a mean: single floor loads are skewed (a slow one now and
  // then), and a mean would lift the local floor and flatter every ratio.
  const floorKey = `${stackMode}:floor`;
  const floorAt = timeline.flatMap((entry, i) => (entry.key === floorKey ? [i] : []));
  const localRatios = new Map<string, { wall: number[]; cpu: number[] }>();
  timeline.forEach((entry, i) => {
    if (entry.key === floorKey) return;
    const next = floorAt.findIndex((at) => at > i);
    const around = (next === -1 ? floorAt.slice(-2) : floorAt.slice(Math.max(0, next - 2), next + 2)).map((at) => timeline[at]!);
    const r = localRatios.get(entry.key) ?? { wall: [], cpu: [] };
    r.wall.push(entry.wall / median(around.map((e) => e.wall)));
    r.cpu.push(entry.cpu / median(around.map((e) => e.cpu)));
    localRatios.set(entry.key, r);
  });
  // The raw loads, for a second look at the figures (the path is printed).
  writeFileSync(join(out, 'cold-timeline.json'), JSON.stringify(timeline));
  console.error(`(b) every load in order: ${join(out, 'cold-timeline.json')}`);
  const loadsFor = (key: string) => timeline.filter((entry) => entry.key === key);
  const load = (mode: Mode, name: string) => median(loadsFor(`${mode}:${name}`).map((entry) => entry.wall));
  const cpuLoad = (mode: Mode, name: string) => median(loadsFor(`${mode}:${name}`).map((entry) => entry.cpu));
  const kb = (mode: Mode, name: string) => (bundleOf(mode, name).sizes.get(name) ?? 0) / 1024;
  const totalKb = (mode: Mode, name: string) => (bundleOf(mode, name).totalSizes.get(name) ?? 0) / 1024;
  const floorMode: Mode = load('external', 'floor') <= load('bundled', 'floor') ? 'external' : 'bundled';
  const floor = load(floorMode, 'floor');
  // Ratios are to the stack's floor nearby; when the other floor is the cheaper one, rescaled to it.
  const toFloorMode = load(stackMode, 'floor') / floor;
  const cpuToFloorMode = cpuLoad(stackMode, 'floor') / cpuLoad(floorMode, 'floor');
  const ratioOf = (mode: Mode, name: string) => median(localRatios.get(`${mode}:${name}`)!.wall) * toFloorMode;
  const rowsOf = (list: { name: string }[]) =>
    list.map((e) => ({ name: e.name, kb: kb(stackMode, e.name), totalKb: totalKb(stackMode, e.name), load: load(stackMode, e.name), x: ratioOf(stackMode, e.name) })).sort((a, b) => b.x - a.x);
  const apiRows = rowsOf(api);
  const jobRows = rowsOf(jobEntries);
  const medianX = median(apiRows.map((r) => r.x));
  const cpuX = api.map((e) => median(localRatios.get(`${stackMode}:${e.name}`)!.cpu) * cpuToFloorMode).sort((a, b) => b - a);
  const worst = apiRows[0]!;
  const over = apiRows.filter((r) => r.x > COLD_GOAL_WORST);
  const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');
  const row = (r: { name: string; kb: number; totalKb: number; load: number; x: number }) => `| ${r.name} | ${r.kb.toFixed(1)} KB | ${r.totalKb.toFixed(1)} KB | ${ms(r.load)} | ${r.x.toFixed(2)}× |`;
  const modeMedian = (mode: Mode) => median(api.map((e) => load(mode, e.name)));
  const modeKb = (mode: Mode) => median(api.map((e) => kb(mode, e.name)));
  const faster = api.filter((e) => load(stackMode, e.name) <= load(otherMode, e.name)).length;
  const loadavg = require('node:os').loadavg() as number[];
  return [
    '## (b) Cold start: module load time against the floor',
    '',
    `Each function's bundle as the stack builds it (lib/bundle.ts: one esbuild build per function with code splitting, ESM, minified, AWS SDK **${stackMode}**; a module reached only through a dynamic \`import()\` is a chunk of its own in the function's directory, which Node does not read until its path runs: "at start" is \`index.mjs\` with the chunks it imports statically, "total" all the code in the directory), loaded with \`await import()\` in a fresh Node process; ${runs} rounds, every round loading every bundle once in a new random order with the floor loaded before every ${FLOOR_EVERY} bundles. One load of the same file varies by ±30 % from process to process here, and the machine drifts over seconds, so a function's ratio is the median over its loads of its time against the local floor, the median of the two floor loads before and the two after it (\"load\" is its median time); the SDK comparison and the source-map figures come from ${otherRuns} of those rounds. The floor is a handler that only creates a DynamoDB document client, built and split by the same \`bundleEntries\` as the functions, with the SDK bundled (${ms(load('bundled', 'floor'))}, ${kb('bundled', 'floor').toFixed(1)} KB at start of ${totalKb('bundled', 'floor').toFixed(1)} KB) and external (${ms(load('external', 'floor'))}, ${kb('external', 'floor').toFixed(1)} KB at start of ${totalKb('external', 'floor').toFixed(1)} KB); the cheaper, **${floorMode}, ${ms(floor)}**, is the floor. Load average when measured: ${loadavg.map((l) => l.toFixed(2)).join(', ')} (${cpus().length} cores).`,
    '',
    `**Goal check (API functions, ${apiRows.length}): median ${medianX.toFixed(2)}× the floor (goal ≤ ${COLD_GOAL_MEDIAN}×: ${verdict(medianX <= COLD_GOAL_MEDIAN)}); worst ${worst.x.toFixed(2)}×, ${worst.name} (goal ≤ ${COLD_GOAL_WORST}× for each: ${verdict(over.length === 0)}).**${over.length ? ` Over ${COLD_GOAL_WORST}×: ${over.map((r) => r.name).join(', ')}.` : ''}`,
    '',
    `Cross-checks: on CPU time (the loading process's own user + system time, ratios to the local floor the same way), floor ${ms(cpuLoad(floorMode, 'floor'))}, median API function ${median(cpuX).toFixed(2)}× the floor, worst ${cpuX[0]!.toFixed(2)}×; without the local floor, the median API function's median load over the floor's median load is ${(modeMedian(stackMode) / floor).toFixed(2)}×.`,
    '',
    '| API function | at start | total | load | × floor |',
    '|---|---|---|---|---|',
    ...apiRows.map(row),
    '',
    'Job functions (queue and schedule workers; no goal: their load time never reaches an API caller):',
    '',
    '| job function | at start | total | load | × floor |',
    '|---|---|---|---|---|',
    ...jobRows.map(row),
    '',
    `AWS SDK bundled against external, the same ${apiRows.length} API functions in the same rounds (this decides \`DEFAULT_EXTERNAL_AWS_SDK\` in lib/bundle.ts):`,
    '',
    '| AWS SDK | floor | median API function | median loaded at start |',
    '|---|---|---|---|',
    ...(['bundled', 'external'] as Mode[]).map((mode) => `| ${mode}${mode === stackMode ? ' (the stack)' : ''} | ${ms(load(mode, 'floor'))} | ${ms(modeMedian(mode))} | ${modeKb(mode).toFixed(1)} KB |`),
    '',
    `${stackMode[0]!.toUpperCase()}${stackMode.slice(1)} loaded faster for ${faster} of ${api.length} API functions.`,
    '',
    `Source maps: off by default; with \`SOURCE_MAPS=true\` at synth the functions run with \`NODE_OPTIONS=--enable-source-maps\` (readable stack traces), and Node then reads the map of every file it loads. What that would add, in the same rounds, with the flag: the ${stackMode} floor ${ms(median(loadsFor('maps:floor').map((entry) => entry.wall)))} (against ${ms(load(stackMode, 'floor'))} without), ${SOURCE_MAPPED} ${ms(median(loadsFor(`maps:${SOURCE_MAPPED}`).map((entry) => entry.wall)))} (against ${ms(load(stackMode, SOURCE_MAPPED))}). The table above loads every bundle as deployed by default, without the flag.`,
    '',
    COLD_GAP,
    '',
  ].join('\n');
}

/** Calls the API with a key; a figure is only worth having for a call that succeeded, so a failure throws. */
function apiCaller(url: string, key: string) {
  return async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${url}${path}`, { method, headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
    const json = (await res.json()) as { success: boolean; data?: { id: string } };
    if (!json.success) throw new Error(`${method} ${path} failed: ${JSON.stringify(json)}`);
    return json;
  };
}

async function cost(url: string, key: string, queueIdle: () => Promise<void>) {
  const call = apiCaller(url, key);
  await call('GET', '/api/v1/agents?limit=1'); // warm the key cache: the figures below are per call once the key is cached
  const rows: string[] = [];
  const measure = async (label: string, fn: () => Promise<unknown>) => {
    await queueIdle();
    consumed.read = 0;
    consumed.write = 0;
    consumed.rateLimit = 0;
    const result = await fn();
    const dollars = (consumed.read * 0.125 + consumed.write * 0.625);
    const withoutLimit = consumed.write - consumed.rateLimit;
    rows.push(`| ${label} | ${consumed.read} | ${consumed.write} | ${consumed.rateLimit} | ${!consumed.rateLimit ? '—' : withoutLimit > 0 ? `+${((consumed.write / withoutLimit - 1) * 100).toFixed(0)}%` : 'all (a read)'} | $${dollars.toFixed(3)} |`);
    return result;
  };
  const tool = (await measure('POST /tools', () => call('POST', '/api/v1/tools', { name: 't', definition: { name: 'lookup', description: 'd', parameters: { type: 'object', properties: { q: { type: 'string', description: 'q' } }, required: ['q'] } } }))) as { data: { id: string } };
  const widget = (await measure('POST /widget-settings', () => call('POST', '/api/v1/widget-settings', { name: 'w' }))) as { data: { id: string } };
  const agent = (await measure('POST /agents (one tool, one widget)', () => call('POST', '/api/v1/agents', { name: 'a', selected_tools: [{ tool_id: tool.data.id }], widget_settings_id: widget.data.id }))) as { data: { id: string } };
  await measure('GET /agents/{id}', () => call('GET', `/api/v1/agents/${agent.data.id}`));
  await measure('GET /agents?limit=20', () => call('GET', '/api/v1/agents?limit=20'));
  await measure('GET /agents?status=…', () => call('GET', '/api/v1/agents?status=AGENT_STATUS_ACTIVE'));
  await measure('PATCH /agents/{id} (fields)', () => call('PATCH', `/api/v1/agents/${agent.data.id}`, { temperature: 1 }));
  await measure('PATCH /agents/{id}/status', () => call('PATCH', `/api/v1/agents/${agent.data.id}/status`, { status: 'AGENT_STATUS_INACTIVE' }));
  await measure('GET /widget/{id}/config (public)', () => fetch(`${url}/api/v1/widget/${widget.data.id}/config`).then((r) => r.json()));
  await measure('DELETE /tools/{id} (one agent cleaned)', () => call('DELETE', `/api/v1/tools/${tool.data.id}`));
  await measure('DELETE /agents/{id}', () => call('DELETE', `/api/v1/agents/${agent.data.id}`));
  await measure('GET /api-keys', () => call('GET', '/api/v1/api-keys'));
  const listed = (await call('GET', '/api/v1/phone-numbers/available?country=US&area_code=415&limit=1')) as unknown as { data: { phone_number: string; price: number }[] };
  const offer = listed.data[0];
  await measure('POST /phone-numbers/buy (number, global owner, charge)', () => call('POST', '/api/v1/phone-numbers/buy', { phone_number: offer.phone_number, price: offer.price }));
  await measure('GET /phone-numbers', () => call('GET', '/api/v1/phone-numbers'));
  const contact = (await measure('POST /contacts (with search entries)', () => call('POST', '/api/v1/contacts', { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', phone: '+14155550100' }))) as { data: { id: string } };
  await measure('GET /contacts/search?q=ada', () => call('GET', '/api/v1/contacts/search?q=ada'));
  await measure('POST /contacts/{id}/notes (note, activity, stats)', () => call('POST', `/api/v1/contacts/${contact.data.id}/notes`, { content: 'Prefers mornings' }));
  await measure('GET /contacts/{id}/activities', () => call('GET', `/api/v1/contacts/${contact.data.id}/activities`));
  const host = (await call('POST', '/api/v1/agents', { name: 'scheduler' })) as { data: { id: string } };
  const start = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 15, 10, 0, 0)).toISOString();
  await measure('POST /scheduler/appointments (30 min: 6 slot locks)', () => call('POST', '/api/v1/scheduler/appointments', { agent_id: host.data.id, contact_id: contact.data.id, attendee_name: 'Ada', start_time: start, duration_minutes: 30 }));
  await measure('POST /rag/knowledge-bases', () => call('POST', '/api/v1/rag/knowledge-bases', { name: 'FAQ' }));
  // A call's whole life: the metering counts every DynamoDB call of this process, jobs included.
  const answered = { agent_id: host.data.id, from_phone_number: offer.phone_number, to_phone_number: '+14155550100', contact_id: contact.data.id };
  await measure('One answered call, whole life (POST /calls, dial claim, 4 carrier events, end + charge + events, contact history, analysis)', async () => {
    await call('POST', '/api/v1/calls', answered);
    await queueIdle();
  });
  await measure('One busy call, whole life (POST /calls, dial claim, 3 carrier events, end, analysis)', async () => {
    await call('POST', '/api/v1/calls', { ...answered, to_phone_number: '+14155550108', contact_id: undefined });
    await queueIdle();
  });
  const placed = await callsPlacedPerSecond(call, { ...answered, to_phone_number: '+14155550108', contact_id: undefined });
  await queueIdle();
  return [
    '## (c) Cost: DynamoDB capacity per operation',
    '',
    'Consumed capacity as DynamoDB Local reports it (`ReturnConsumedCapacity: TOTAL` on every call the handler makes), with the API key already cached. DynamoDB Local\'s accounting of transactions is its own (DynamoDB charges two units per KB for each item of a transaction), so treat transactional writes as a lower bound. Dollars per million calls at on-demand prices ($0.125 per million read request units, $0.625 per million write request units, us-east-1). A GET is one strongly consistent `GetItem` of a small item: 1 read unit. A list reads its page plus the counter item in parallel. Transactions cost twice: creates write the item and its counters in one.',
    '',
    '| operation | read units | write units | of which the rate limit | extra writes over the operation\'s own | $ per million calls |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    'The per-key rate limit (docs/api.md, "Rate limits") claims its tokens in leases, one conditional write per slice of a key\'s minute, so it rarely shows in a single call\'s units above (a row shows one write unit in the column when that call\'s process claimed its next slice). Counted per request, as before leases (`RATE_LIMIT_MODE=request`), every authenticated call wrote one unit more than its operation needs, $0.625 per million calls: for a GET that doubled the DynamoDB cost of a call (1 read + 1 write unit instead of 1 read). The public widget config has no key and no counter.',
    '',
    'Agents are written to the table and, with ALL-attribute projections, to gsi1 (status) and gsi2 (widget) too, so an agent',
    'write costs about three times its item size; projecting only keys would cut writes and add reads to the status-filtered',
    'list and the public widget config. Reads were judged the hotter path, so the projections stay ALL.',
    '',
    `Calls placed per second on the local runtime (metering on): ${placed}.`,
    '',
  ].join('\n');
}

/**
 * Webhooks: what one event costs (the outbox put inside the booking's transaction, then fan-out
 * and delivery) with one and with three endpoints, and how long a receiver on loopback waits
 * for its 200 after the state change.
 */
async function webhooks(url: string, key: string, queueIdle: () => Promise<void>) {
  const call = apiCaller(url, key);
  const answered: number[] = [];
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.end('ok');
      answered.push(performance.now());
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
  const host = (await call('POST', '/api/v1/agents', { name: 'webhook bench' })) as { data: { id: string } };
  let slot = 0;
  const book = () => {
    const start = new Date(Date.UTC(new Date().getUTCFullYear() + 2, 0, 1) + slot++ * 30 * 60_000).toISOString();
    return call('POST', '/api/v1/scheduler/appointments', { agent_id: host.data.id, attendee_name: 'Ada', start_time: start, duration_minutes: 15 });
  };
  const rows: string[] = [];
  const meter = async (label: string, fn: () => Promise<unknown>) => {
    consumed.read = 0;
    consumed.write = 0;
    await fn();
    rows.push(`| ${label} | ${consumed.read} | ${consumed.write} | $${(consumed.read * 0.125 + consumed.write * 0.625).toFixed(3)} |`);
  };
  const perEvent = async (endpoints: number) => {
    await queueIdle();
    await meter(`booking with its event (${endpoints} endpoint${endpoints === 1 ? '' : 's'} subscribed)`, book);
    await meter(`  then fan-out and ${endpoints} successful deliver${endpoints === 1 ? 'y' : 'ies'}`, queueIdle);
  };
  try {
    await perEvent(0);
    await call('POST', '/api/v1/webhooks', { url: hookUrl, events: ['appointment.booked'] });
    await perEvent(1);
    for (let i = 0; i < 2; i++) await call('POST', '/api/v1/webhooks', { url: hookUrl, events: ['*'] });
    await perEvent(3);

    // Latency with one endpoint subscribed: from sending the booking to the receiver's 200.
    const hooks = (await call('GET', '/api/v1/webhooks?limit=100')) as unknown as { data: { id: string; events: string[] }[] };
    for (const h of hooks.data.filter((w) => w.events.includes('*'))) await call('DELETE', `/api/v1/webhooks/${h.id}`);
    const latencies: number[] = [];
    const runs = Math.max(10, Math.min(50, Math.floor(ITERATIONS / 10)));
    for (let i = 0; i < runs; i++) {
      await queueIdle();
      const before = answered.length;
      const t0 = performance.now();
      await book();
      while (answered.length === before) await new Promise((r) => setTimeout(r, 1));
      latencies.push(answered[before]! - t0);
    }
    return [
      '## (d) Webhooks: cost per event and time to the receiver',
      '',
      'Capacity as in (c). The booking row includes the event\'s outbox put (one item in its transaction); the row below it is the',
      'background work until the queues are idle: the fan-out (event read, endpoint Query, one job put per endpoint, the event\'s',
      'undispatched entry removed) and each delivery (job read, endpoint and event reads, claim, then the attempt log put and',
      'the job update in one transaction). Writes to the sparse indexes count in the write units, and with ALL-attribute',
      'projections an update of the event (its undispatched entry removed) also rewrites its copy in the per-type index: most of',
      'the fan-out\'s writes with no endpoint. Each further endpoint adds about 3 reads and 8 write units.',
      '',
      '| step | read units | write units | $ per million |',
      '|---|---|---|---|',
      ...rows,
      '',
      `Time from sending a booking to the receiver's 200 (one endpoint, ${runs} runs, local runtime with capacity metering on):`,
      `median ${ms(median(latencies))}, p95 ${ms(pct(latencies, 95))}. It includes the booking request itself, the fan-out`,
      'and delivery jobs in the in-process queue runner, and the signed POST to a loopback receiver.',
      '',
    ].join('\n');
  } finally {
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  }
}

/**
 * Calls placed per second: 50 POST /calls at once (busy numbers), timed until none is `queued`
 * any more, i.e. until the call-place job has dialed every one of them.
 */
async function callsPlacedPerSecond(call: (method: string, path: string, body?: unknown) => Promise<unknown>, body: Record<string, unknown>): Promise<string> {
  const n = 50;
  const started = performance.now();
  await Promise.all(Array.from({ length: n }, () => call('POST', '/api/v1/calls', body)));
  const accepted = performance.now();
  for (;;) {
    const queued = (await call('GET', '/api/v1/calls?status=queued&limit=1')) as { meta: { total: number } };
    if (queued.meta.total === 0) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const dialed = performance.now();
  return `${(n / ((dialed - started) / 1000)).toFixed(1)} calls/s dialed (${n} calls; POST /calls alone ${(n / ((accepted - started) / 1000)).toFixed(1)}/s)`;
}

/** A partial run (BENCH_SECTIONS) replaces only its own sections of the existing report. */
function replaceSections(existing: string, fresh: string[]): string {
  let out = existing;
  for (const section of fresh) {
    const heading = section.split('\n')[0];
    // A lettered section replaces its letter's section even when its title changed.
    const letter = /^## \([a-z]\)/.exec(heading)?.[0];
    const start = out.indexOf(letter ?? heading);
    if (start < 0) {
      out = `${out.trimEnd()}\n\n${section}`;
      continue;
    }
    const next = out.indexOf('\n## ', start + heading.length);
    out = `${out.slice(0, start)}${section.trimEnd()}\n${next < 0 ? '' : out.slice(next)}`;
  }
  return out;
}

/** The sections that need the local runtime: (a), (c), (d). */
async function runtimeSections(): Promise<string[]> {
  const key = generateApiKey();
  const platform = await startPlatform({ port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, allowLoopbackFetch: true, env: { LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000' }, log: () => undefined });
  const sections: string[] = [];
  try {
    if (SECTIONS.has('overhead')) sections.push(await overhead(platform.url, key, platform.keys[0].organizationId, platform.dynamoEndpoint));
    // Metering asks DynamoDB to count capacity on every call, which costs time: only after the overhead run.
    meterCapacity();
    if (SECTIONS.has('cost')) sections.push(await cost(platform.url, key, () => platform.queue.waitForIdle(10_000)));
    if (SECTIONS.has('webhooks')) sections.push(await webhooks(platform.url, key, () => platform.queue.waitForIdle(10_000)));
    if (SECTIONS.has('chat')) {
      const { chatBenchmark } = await import('./chat');
      const meter = { reset: () => Object.assign(consumed, { read: 0, write: 0, rateLimit: 0, readRequests: 0, itemsWritten: 0 }), read: () => ({ ...consumed }) };
      sections.push(await chatBenchmark(apiCaller(platform.url, key), meter, () => platform.queue.waitForIdle(10_000)));
    }
  } finally {
    await platform.stop();
  }
  return sections;
}

async function main() {
  const sections: string[] = [];
  // The cold-start section needs no runtime: a cold-only run starts none, so nothing else competes for the cores.
  if (['overhead', 'cost', 'webhooks', 'chat'].some((s) => SECTIONS.has(s))) sections.push(...(await runtimeSections()));
  if (SECTIONS.has('cold')) sections.push(coldStart());
  const ragBench = join(__dirname, 'rag.ts');
  if (SECTIONS.has('rag') && existsSync(ragBench)) {
    const { ragBenchmark } = (await import(ragBench)) as { ragBenchmark?: () => Promise<string> };
    if (ragBenchmark) sections.push(await ragBenchmark());
  }
  if (SECTIONS.has('campaigns')) {
    const { campaignBenchmark } = await import('./campaigns');
    sections.push(await campaignBenchmark());
  }
  if (SECTIONS.has('voice')) {
    const { voiceBenchmark } = await import('./voice');
    sections.push(await voiceBenchmark());
  }
  if (SECTIONS.has('relay')) {
    const { relayBenchmark } = await import('./relay');
    sections.push(await relayBenchmark());
  }
  if (SECTIONS.has('streaming')) {
    const { streamingBenchmark } = await import('./streaming');
    sections.push(await streamingBenchmark());
  }
  if (SECTIONS.has('widget')) {
    const { widgetBenchmark } = await import('./widget');
    sections.push(await widgetBenchmark());
  }
  if (SECTIONS.has('webaudio')) {
    const { widgetAudioBenchmark } = await import('./widget-audio');
    sections.push(await widgetAudioBenchmark());
  }
  if (SECTIONS.has('agenttests')) {
    const { agentTestsBenchmark } = await import('./agent-tests');
    sections.push(await agentTestsBenchmark());
  }
  if (SECTIONS.has('analytics')) {
    const { analyticsBenchmark } = await import('./analytics');
    sections.push(await analyticsBenchmark());
  }
  if (SECTIONS.has('routing')) sections.push(await (await import('./inbound-routing')).inboundRoutingBenchmark());
  if (SECTIONS.has('handoff')) sections.push(await (await import('./handoff')).handoffBenchmark());
  if (SECTIONS.has('transfer')) sections.push(await (await import('./warm-transfer')).warmTransferBenchmark());
  if (SECTIONS.has('handoffvoice')) sections.push(await (await import('./handoff-voice')).handoffVoiceBenchmark());
  if (SECTIONS.has('layers')) sections.push(await (await import('./agent-get-layers')).agentGetLayersBenchmark());
  if (SECTIONS.has('accuracy')) sections.push(await (await import('./latency-accuracy')).latencyAccuracyBenchmark());
  if (SECTIONS.has('concurrency')) sections.push(await (await import('./concurrency')).concurrencyBenchmark());
  // In the report's order: (a), (b), (c), then the rest.
  sections.sort((x, y) => (x.startsWith('## (') ? x.slice(3, 6) : '~').localeCompare(y.startsWith('## (') ? y.slice(3, 6) : '~'));
  const doc = [
    '# Benchmarks',
    '',
    `Written by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)} (Node ${process.version}, ${require('node:os').cpus().length} cores). Figures are ratios against a baseline measured in the same run; absolute times are for orientation only.`,
    '',
    ...sections,
  ].join('\n');
  const file = join(root, 'docs', 'benchmarks.md');
  if (SECTIONS.size === ALL_SECTIONS.split(',').length || !existsSync(file)) writeFileSync(file, doc);
  else writeFileSync(file, replaceSections(readFileSync(file, 'utf8'), sections));
  console.log(doc);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * Where a plain request's time goes (issue 43): `GET /api/v1/agents/{id}` taken apart layer by
 * layer against a raw DynamoDB Local `GetItem` of the same item, all in one run and one process
 * (the local runtime's), each iteration timing every layer once in a rotating order so the
 * machine's drift weighs on all alike:
 *
 *   raw     a plain document client (no middleware of ours), GetItem, ConsistentRead
 *   store   shared/db/store.ts getItem: the same read through the platform's client (its access guard,
 *           fault point, conflict retry, trace and constructor-shield middleware)
 *   handler shared/domain/agents/service.ts getAgent: the store read and the agent's view
 *   stack   functions/agents/get.ts `handler(event, context)` with an API Gateway event: the trace
 *           wrapper and the whole middleware stack (auth from the key cache, rate limit from its
 *           lease, validation, envelope) around the handler: what a deployed function runs
 *   local   the same inside the local runtime's grant check (runAs), as the local server calls it
 *   http    the GET over loopback HTTP through the local runtime (keep-alive, client in this process)
 *
 * Tracing is off (no OTEL_* setting). Goal: `stack` (the middleware and the handler together)
 * ≤ 1.3× `raw` at p50. Part of `npm run bench` (section `layers`); alone:
 *
 *   BENCH_LAYERS_ITERATIONS=400 npx tsx bench/agent-get-layers.ts
 */
import http from 'node:http';
import { cpus, loadavg } from 'node:os';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { startPlatform } from '../shared/local/platform';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { runAs } from '../shared/access/enforce';
import { getAgent as getAgentOp } from '../shared/domain/agents/operations';
import { benchApi, runAsScript } from './support';

const ITERATIONS = Number(process.env.BENCH_LAYERS_ITERATIONS ?? 400);
const WARMUP = 50;
const LAYERS = ['raw', 'store', 'handler', 'stack', 'local', 'http'] as const;
type Layer = (typeof LAYERS)[number];
/** The goal: the middleware and the handler together at most this many times the raw read, p50. */
const GOAL = 1.3;

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

export async function agentGetLayersBenchmark(): Promise<string> {
  const key = generateApiKey();
  const platform = await startPlatform({
    port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, voice: false, log: () => undefined,
    env: { LOG_LEVEL: 'SILENT', POWERTOOLS_LOG_LEVEL: 'ERROR', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000' },
  });
  const agentKeepAlive = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const api = benchApi(platform.url, key, { strict: true });
    const id = (await api('POST', '/api/v1/agents', { name: 'layers' })).data.id as string;
    const orgId = platform.keys[0]!.organizationId;
    // Imported after the platform set the environment, as the local server's loader does (the same module instances).
    const { keys } = await import('../shared/db/keys');
    const { getItem } = await import('../shared/db/store');
    const { tableName } = await import('../shared/db/client');
    const { getAgent } = await import('../shared/domain/agents/service');
    const { handler } = (await import('../functions/agents/get')) as unknown as { handler: (e: APIGatewayProxyEventV2, c: Context) => Promise<{ statusCode: number }> };
    const { apiEvent, lambdaContext } = await import('../test/support/events');
    const raw = DynamoDBDocumentClient.from(new DynamoDBClient({ endpoint: platform.dynamoEndpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }));
    const k = keys.agent(orgId, id);
    const path = `/api/v1/agents/${id}`;
    const event = () => apiEvent({ path, headers: { 'x-api-key': key }, pathParameters: { id } });
    const ok = (r: { statusCode: number }) => {
      if (r.statusCode !== 200) throw new Error(`handler answered ${r.statusCode}`);
    };
    const { port } = new URL(platform.url);
    const get = () => new Promise<void>((resolve, reject) => {
      const req = http.request({ hostname: '127.0.0.1', port, path, method: 'GET', agent: agentKeepAlive, headers: { 'x-api-key': key } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET answered ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end();
    });
    const run: Record<Layer, () => Promise<unknown>> = {
      raw: async () => {
        if (!(await raw.send(new GetCommand({ TableName: tableName(), Key: k, ConsistentRead: true }))).Item) throw new Error('item missing');
      },
      store: () => getItem(k),
      handler: () => getAgent(orgId, id),
      stack: async () => ok(await handler(event(), lambdaContext)),
      local: async () => ok(await runAs({ name: getAgentOp.operationId, access: getAgentOp.access }, () => handler(event(), lambdaContext))),
      http: get,
    };
    const times = Object.fromEntries(LAYERS.map((l) => [l, [] as number[]])) as Record<Layer, number[]>;
    // This process's CPU time per layer too (user + system): other processes on a shared machine disturb it much less than the wall time.
    const cpu = Object.fromEntries(LAYERS.map((l) => [l, [] as number[]])) as Record<Layer, number[]>;
    for (let i = 0; i < WARMUP + ITERATIONS; i++) {
      // A rotating order: each layer runs first, second, … equally often.
      for (let j = 0; j < LAYERS.length; j++) {
        const layer = LAYERS[(i + j) % LAYERS.length]!;
        const c = process.cpuUsage();
        const t = performance.now();
        await run[layer]();
        const wall = performance.now() - t;
        const used = process.cpuUsage(c);
        if (i >= WARMUP) {
          times[layer].push(wall);
          cpu[layer].push((used.user + used.system) / 1000);
        }
      }
    }
    const p50 = (l: Layer) => pct(times[l], 50);
    const x = (l: Layer) => p50(l) / p50('raw');
    const ms = (n: number) => `${n.toFixed(2)} ms`;
    const label: Record<Layer, string> = {
      raw: 'raw `GetItem` (a plain document client)',
      store: 'the store: `getItem` through the platform\'s client (its middleware)',
      handler: 'the handler\'s work: `getAgent` (the store read and the view)',
      stack: '**the middleware and the handler**: `functions/agents/get.ts` `handler(event)` (trace wrapper, auth, rate limit, validation, envelope)',
      local: 'the same inside the local runtime\'s grant check (`runAs`)',
      http: '`GET /api/v1/agents/{id}` over loopback HTTP through the local runtime',
    };
    const cpuMean = (l: Layer) => cpu[l].reduce((a, b) => a + b, 0) / cpu[l].length;
    const signed = (n: number) => `${n < 0 ? '−' : '+'}${ms(Math.abs(n))}`;
    const rows = LAYERS.map((l, i) => `| ${label[l]} | ${ms(p50(l))} | ${i ? signed(p50(l) - p50(LAYERS[i - 1]!)) : ''} | ${ms(pct(times[l], 90))} | ${x(l).toFixed(2)}× | ${ms(cpuMean(l))} | ${i ? signed(cpuMean(l) - cpuMean(LAYERS[i - 1]!)) : ''} |`);
    const met = x('stack') <= GOAL;
    return [
      '## (layers) Where a plain request\'s time goes: `GET /agents/{id}` layer by layer',
      '',
      `\`npm run bench\` (section \`layers\`) or \`npx tsx bench/agent-get-layers.ts\`. One process (the local runtime's: DynamoDB Local is its child), tracing off, ${ITERATIONS} iterations after ${WARMUP} to warm up; each iteration times every layer once, in an order that rotates by one each iteration, against the same item. Each row adds one layer around the row above it. The access log line of each request is written as deployed (INFO, to this process's stdout). Load average when measured: ${loadavg().map((l) => l.toFixed(2)).join(', ')} (1/5/15 min, ${cpus().length} cores).`,
      '',
      '| layer | p50 | added (p50) | p90 | × raw (p50) | CPU, mean | CPU added |',
      '|---|---|---|---|---|---|---|',
      ...rows,
      '',
      `**The middleware and the handler together: ${x('stack').toFixed(2)}× the raw read at p50 (goal ≤ ${GOAL}×: ${met ? 'met' : '**not met**'}).** Through the local runtime over HTTP: ${x('http').toFixed(2)}×.`,
      '',
    ].join('\n');
  } finally {
    agentKeepAlive.destroy();
    await platform.stop();
  }
}

runAsScript(module, agentGetLayersBenchmark);

/**
 * `npx tsx bench/stack.ts`: the synthesized stack run locally against the source runtime
 * (docs/benchmarks.md, "The synthesized stack, run locally").
 * - synth: `cdk synth` with bundling (skipped when STACK_ASSEMBLY names an assembly), timed;
 * - start: the runner reading and starting the template, until the HTTP API answers;
 * - what ran from the template (functions, routes, queues, schedules, tasks);
 * - the same flows on both runtimes, interleaved, ITERATIONS rounds each after a warm-up:
 *   GET /agents/{id}, a chat's first turn (create + turn on the local rules), a contact's create and
 *   list, each p50/p95 and the stack's ratio to the source's.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { startPlatform } from '../shared/local/platform';
import { runStack } from '../shared/local/stack/runner';
import { synthesize } from '../shared/local/stack/synth';
import { provisionOrganizationKey } from '../shared/local/stack/provision';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 40);
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

type Call = (method: string, path: string, body?: unknown) => Promise<any>;
const caller = (url: string, key: string): Call => async (method, path, body) => {
  const res = await fetch(`${url}${path}`, { method, headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${path} answered ${res.status}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
};

async function main() {
  const lines: string[] = [];
  let assemblyDir = process.env.STACK_ASSEMBLY;
  if (!assemblyDir) {
    assemblyDir = resolve('.build', 'bench-stack.out');
    const { millis } = await synthesize({ outDir: assemblyDir });
    lines.push(`| cdk synth, bundling on | ${(millis / 1000).toFixed(1)} s |`);
  }
  const t0 = performance.now();
  const stack = await runStack({ assemblyDir, secretValues: { VoiceRealtimeApiKey: JSON.stringify({ api_key: 'sk-bench' }) } });
  const key = `vap_${randomBytes(24).toString('base64url')}`;
  await provisionOrganizationKey(stack, { key, name: 'Bench' });
  lines.push(`| The runner: template read, storage, servers, the voice task started; ready | ${((performance.now() - t0) / 1000).toFixed(1)} s |`);
  const c = stack.counts;
  const counts = `${c.functions} functions, ${c.httpRoutes} HTTP routes (with \`$default\`), ${c.restMethods} REST methods, ${c.webSocketRoutes} WebSocket routes, ${c.queues} queues (${c.eventSourceMappings} with an event source mapping), ${c.schedules} schedules, ${c.tasks} ECS task`;

  const source = await startPlatform({ inMemory: true, apiKeys: [`vap_${randomBytes(24).toString('base64url')}`], tickSeconds: 86400, env: { POWERTOOLS_LOG_LEVEL: 'ERROR' } });
  const runtimes = [
    { name: 'source runtime (npm start)', call: caller(source.url, source.apiKeys[0]!) },
    { name: 'synthesized stack (npm run start:stack)', call: caller(stack.url, key) },
  ];
  const flows: Array<[string, (call: Call, ctx: { agentId: string }) => Promise<unknown>]> = [
    ['GET /agents/{id}', (call, ctx) => call('GET', `/api/v1/agents/${ctx.agentId}`)],
    ['a chat: create, then one turn (local rules)', async (call, ctx) => {
      const chat = await call('POST', '/api/v1/chats', { agent_id: ctx.agentId });
      return call('POST', `/api/v1/chats/${chat.data.id}/messages`, { content: 'Hello there' });
    }],
    ['POST /contacts, then GET /contacts', async (call) => {
      await call('POST', '/api/v1/contacts', { first_name: 'Bench', phone: `+1415555${String(Math.floor(Math.random() * 10000)).padStart(4, '0')}` });
      return call('GET', '/api/v1/contacts?limit=10');
    }],
  ];
  const ctxs = await Promise.all(runtimes.map(async (r) => ({ agentId: (await r.call('POST', '/api/v1/agents', { name: 'Bench agent' })).data.id as string })));
  const times = runtimes.map(() => flows.map(() => [] as number[]));
  for (let i = 0; i < ITERATIONS + 3; i++) {
    for (const [f, [, flow]] of flows.entries()) {
      for (const [r, runtime] of runtimes.entries()) {
        const t = performance.now();
        await flow(runtime.call, ctxs[r]!);
        if (i >= 3) times[r]![f]!.push(performance.now() - t);
      }
    }
  }
  const rows = flows.map(([label], f) => {
    const [a, b] = [times[0]![f]!, times[1]![f]!];
    return `| ${label} | ${pct(a, 50).toFixed(1)} / ${pct(a, 95).toFixed(1)} | ${pct(b, 50).toFixed(1)} / ${pct(b, 95).toFixed(1)} | ${(pct(b, 50) / pct(a, 50)).toFixed(2)}× |`;
  });
  const denials = stack.aws.denials.length;
  await Promise.all([stack.stop(), source.stop()]);
  console.log(
    [
      '| Step | Time |',
      '|---|---:|',
      ...lines,
      '',
      `From the template: ${counts}. AccessDenied during the run: ${denials}.`,
      '',
      `| Flow (${ITERATIONS} rounds, interleaved) | source p50 / p95 (ms) | stack p50 / p95 (ms) | stack ÷ source (p50) |`,
      '|---|---:|---:|---:|',
      ...rows,
    ].join('\n'),
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});

/**
 * A chat turn with tracing off against on (docs/operations.md, "Traces"): the same turns (the
 * local model, one round) against the local runtime, in two fresh processes, one without any
 * OTEL_* setting and one exporting to an OTLP/HTTP sink on loopback (every span exported, as
 * deployed). Each process warms up, then times BENCH_TRACE_TURNS turns; the figure is the ratio
 * of the medians, the processes run off, on, on, off. Run: `npx tsx bench/traces.ts` (prints a Markdown line for docs/benchmarks.md).
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startPlatform } from '../shared/local/platform';
import { generateApiKey } from '../shared/domain/api-keys/secret';

const TURNS = Number(process.env.BENCH_TRACE_TURNS ?? 200);
const WARM = 20;

async function child(mode: 'off' | 'on'): Promise<void> {
  let spans = 0;
  const sink = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      spans += (body.match(/"spanId"/g) ?? []).length;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
  const env: Record<string, string> = { LOG_LEVEL: 'SILENT', POWERTOOLS_LOG_LEVEL: 'ERROR' };
  if (mode === 'on') env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  const key = generateApiKey();
  const platform = await startPlatform({ port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, env });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${platform.url}${path}`, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return (await res.json()) as { data: any };
  };
  const agent = (await call('POST', '/api/v1/agents', { name: 'Bench', begin_message: 'Hello!' })).data;
  const chat = (await call('POST', '/api/v1/chats', { agent_id: agent.id })).data;
  const times: number[] = [];
  for (let i = 0; i < WARM + TURNS; i++) {
    // A fresh chat every 50 turns keeps each under its message cap.
    const id = i % 50 === 0 && i ? (await call('POST', '/api/v1/chats', { agent_id: agent.id })).data.id : chat.id;
    if (i % 50 === 0 && i) chat.id = id;
    const t = performance.now();
    await call('POST', `/api/v1/chats/${chat.id}/messages`, { content: `What are your opening hours? (${i})` });
    if (i >= WARM) times.push(performance.now() - t);
  }
  await platform.stop();
  sink.close();
  times.sort((a, b) => a - b);
  console.log(JSON.stringify({ mode, median: times[Math.floor(times.length / 2)], p90: times[Math.floor(times.length * 0.9)], spans }));
}

function main(): void {
  const run = (mode: string) => JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', __filename, mode], { env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' } }).toString().trim().split('\n').pop()!) as { median: number; p90: number; spans: number };
  // Off, on, on, off: the machine's drift (and a first run's cold caches) weigh on both alike.
  const runs = (['off', 'on', 'on', 'off'] as const).map((mode) => ({ mode, ...run(mode) }));
  const of = (mode: string) => runs.filter((r) => r.mode === mode);
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const off = { median: mean(of('off').map((r) => r.median)), p90: mean(of('off').map((r) => r.p90)) };
  const on = { median: mean(of('on').map((r) => r.median)), p90: mean(of('on').map((r) => r.p90)), spans: of('on')[0]!.spans };
  console.log(`Chat turn (local model, ${TURNS} turns after ${WARM} warm-up per process; processes off, on, on, off, each figure the mean of two medians): tracing off ${off.median.toFixed(1)} ms (p90 ${off.p90.toFixed(1)}), on ${on.median.toFixed(1)} ms (p90 ${on.p90.toFixed(1)}; ${on.spans} spans exported by one process): **×${(on.median / off.median).toFixed(2)}**. Runs: ${runs.map((r) => `${r.mode} ${r.median.toFixed(1)}`).join(', ')} ms.`);
}

const mode = process.argv[2];
if (mode === 'off' || mode === 'on') void child(mode).then(() => process.exit(0), (err: unknown) => { console.error(err); process.exit(1); });
else main();

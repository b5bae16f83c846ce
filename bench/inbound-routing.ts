/**
 * Per-caller routing of inbound calls (issue 37, item 3): the platform's time to answer Twilio's
 * VoiceUrl request for a number with an inbound webhook, minus the webhook's own time (measured
 * inside the webhook, from its request's arrival to its answer's end), against the same answer for
 * a number without a webhook, interleaved, warm, p50/p95. The whole local runtime runs (DynamoDB
 * Local in memory, the inbound function as its Lambda handler, signed as Twilio signs); the
 * webhook is a loopback server that answers another agent, a pinned version and two variables
 * after a fixed delay (a CRM's lookup). Each request is a new call: the answer includes the call
 * session's creation, as in production.
 *
 *   BENCH_ROUTING_CALLS=200 BENCH_ROUTING_WEBHOOK_MS=25 npx tsx bench/inbound-routing.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { startPlatform } from '../shared/local/platform';
import { benchApi, ringInbound } from './support';

const CALLS = Number(process.env.BENCH_ROUTING_CALLS ?? 200);
const WARMUP = 20;
/** The webhook's own work before it answers. */
const WEBHOOK_MS = Number(process.env.BENCH_ROUTING_WEBHOOK_MS ?? 25);
const SID = 'AC000000000000000000000000000b0037';
const TOKEN = 'bench-routing';
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const f = (n: number) => `${n.toFixed(1)} ms`;

export async function inboundRoutingBenchmark(): Promise<string> {
  let answer = '{}';
  const own = new Map<string, number>();
  const webhook = createServer((req, res) => {
    const t0 = performance.now();
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(answer, () => own.set(String(req.headers['webhook-id']), performance.now() - t0));
      }, WEBHOOK_MS);
    });
  });
  await new Promise<void>((r) => webhook.listen(0, '127.0.0.1', r));
  const key = generateApiKey();
  const platform = await startPlatform({
    port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, voice: false, allowLoopbackFetch: true, log: () => undefined,
    env: {
      LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000',
      TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN, VOICE_RUNTIME_URL: 'wss://voice.example.test/stream',
    },
  });
  try {
    const api = benchApi(platform.url, key);
    const front = (await api('POST', '/api/v1/agents', { name: 'Front desk', prompt: 'Be brief.', begin_message: 'Hello.' })).data.id;
    const vip = (await api('POST', '/api/v1/agents', { name: 'VIP desk', prompt: 'Serve {{inbound.tier}} members.', begin_message: 'Welcome back, {{inbound.tier}} member.' })).data.id;
    await api('POST', `/api/v1/agents/${vip}/versions`);
    answer = JSON.stringify({ agent_id: vip, agent_version: 1, variables: { tier: 'gold', account: 'A-1042' } });
    const phone = () => `+1415${String(2_000_000 + Math.floor(Math.random() * 7_000_000))}`;
    const plain = phone();
    const routed = phone();
    await api('POST', '/api/v1/phone-numbers/import', { phone: plain, type: 'pstn', inbound_agent_id: front });
    const made = await api('POST', '/api/v1/phone-numbers/import', {
      phone: routed, type: 'pstn', inbound_agent_id: front, inbound_webhook_url: `http://127.0.0.1:${(webhook.address() as AddressInfo).port}/route`, inbound_webhook_timeout_ms: 3000,
    });
    if (!made.data?.inbound_webhook_secret) throw new Error(`the routed number was not made: ${JSON.stringify(made)}`);

    const ring = (to: string) => ringInbound(platform.url, { accountSid: SID, authToken: TOKEN }, to);
    const baseline: number[] = [];
    const total: number[] = [];
    const webhookOwn: number[] = [];
    const over: number[] = [];
    /** Per pair: the routed answer less the webhook's own time, less the plain answer just before it. */
    const added: number[] = [];
    for (let i = 0; i < WARMUP + CALLS; i++) {
      const a = await ring(plain);
      const b = await ring(routed);
      const mine = own.get(b.sid);
      if (mine === undefined) throw new Error('the webhook was not asked');
      if (i < WARMUP) continue;
      baseline.push(a.ms);
      total.push(b.ms);
      webhookOwn.push(mine);
      over.push(b.ms - mine);
      added.push(b.ms - mine - a.ms);
    }
    const p50Added = pct(added, 50);
    return [
      '## Per-caller routing of inbound calls',
      '',
      `Twilio's VoiceUrl request answered by the local runtime (the inbound function, DynamoDB Local in memory), each a new call; ${CALLS} calls of each kind after ${WARMUP} warm-up, interleaved. The routed number's webhook (loopback) answers another agent, a pinned version and two variables after ${WEBHOOK_MS} ms; its own time is measured inside it (request arrival to answer sent). \`npx tsx bench/inbound-routing.ts\`.`,
      '',
      '| | p50 | p95 |',
      '|---|---|---|',
      `| Answer without a webhook (baseline: the number's agent) | ${f(pct(baseline, 50))} | ${f(pct(baseline, 95))} |`,
      `| Answer with the webhook | ${f(pct(total, 50))} | ${f(pct(total, 95))} |`,
      `| The webhook's own time | ${f(pct(webhookOwn, 50))} | ${f(pct(webhookOwn, 95))} |`,
      `| Answer with the webhook, less the webhook's own time | ${f(pct(over, 50))} | ${f(pct(over, 95))} |`,
      `| **Platform-added time over the webhook's own** (per pair: the line above − the plain answer) | **${f(p50Added)}** | ${f(pct(added, 95))} |`,
      '',
      `Goal (issue 37): platform-added time over the webhook's own time ≤ 20 ms p50 — ${p50Added <= 20 ? 'met' : 'NOT met'} (${f(p50Added)}: the signed request, the answer's checks, the chosen agent's and version's reads, over what answering any call costs). ` +
        'Answering a call at all (the baseline: the number, its contact, the agent and version, the call session written and moved to `in_progress`) is the inbound path as it was before routing; a median near 0 means routing adds less than the run\'s noise.',
      '',
    ].join('\n');
  } finally {
    await platform.stop();
    await new Promise((r) => webhook.close(r));
  }
}

if (require.main === module) {
  inboundRoutingBenchmark().then((s) => console.log(s), (err) => {
    console.error(err);
    process.exit(1);
  });
}

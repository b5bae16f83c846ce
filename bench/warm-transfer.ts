/**
 * Warm transfer (issue 37, item 1): the platform's added time from the model's `transfer_call`
 * to the person's phone ringing (the carrier's `Calls.json` request arriving), excluding the
 * model's own time and Twilio's. On the relay pipeline, end to end on the local runtime (DynamoDB
 * Local in memory, the relay's WebSocket routes and the `<Connect action>` as their Lambda
 * handlers) against the Twilio stand-in and a stand-in Chat Completions model behind a loopback
 * proxy that times each model request (arrival to the answer's end). Per transfer:
 *
 *   added = (tool call answered → the reply's model request arrives)   the tool runs, the next request is built
 *         + (the reply answered → the `end` message: the action asked)   the reply's last token, the turn's write, `end`
 *         + (the action asked → the person's call placed)                the action: the call's conversation, the transfer written, the dial
 *
 * Twilio's own time (from `end` to the action request, from `Calls.json` to the ring) is the
 * stand-in's and is not counted; the briefing's model request runs beside the dial and is not on
 * this path. Baseline, interleaved in the same run: a cold transfer to a destination of the same
 * agent, to the action's `<Dial>` answer (today's path).
 *
 *   BENCH_TRANSFERS=100 npx tsx bench/warm-transfer.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { startPlatform } from '../shared/local/platform';
import { startOpenAiStandIn } from '../test/support/openai-stand-in';
import { startTwilioCarrier } from '../test/support/twilio-carrier';
import { benchApi, twilioEnv } from './support';

const TRANSFERS = Number(process.env.BENCH_TRANSFERS ?? 100);
const WARMUP = 10;
const WARM_TO = '+14155550181';
const COLD_TO = '+14155550182';
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;
const f = (n: number) => `${n.toFixed(1)} ms`;

export async function warmTransferBenchmark(): Promise<string> {
  const model = await startOpenAiStandIn();
  // The proxy in front of the model: each request's arrival and the end of its answer.
  const timings: { arrived: number; finished: number }[] = [];
  const proxy = createServer((req, res) => {
    const timing = { arrived: performance.now(), finished: 0 };
    timings.push(timing);
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', async () => {
      const upstream = await fetch(`${model.url.replace(/\/v1$/, '')}${req.url}`, { method: req.method, headers: { 'content-type': 'application/json', authorization: String(req.headers.authorization ?? '') }, body: Buffer.concat(parts) });
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(Buffer.from(await upstream.arrayBuffer()), () => void (timing.finished = performance.now()));
    });
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const twilio = await startTwilioCarrier({ accountSid: 'AC00000000000000000000000000bench37', authToken: 'bench-warm' });
  const key = generateApiKey();
  const platform = await startPlatform({
    port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, voice: false, log: () => undefined,
    env: {
      LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600', RATE_LIMIT_PER_MINUTE: '100000000',
      ...twilioEnv(twilio),
      LLM_PROVIDER: 'openai', LLM_BASE_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`, LLM_API_KEY: 'sk-bench', VOICE_RUNTIME_URL: 'ws://127.0.0.1:9/stream',
    },
  });
  try {
    const api = benchApi(platform.url, key);
    const agent = (await api('POST', '/api/v1/agents', {
      name: 'Bench desk', voice_pipeline: 'relay', prompt: 'Be brief.', begin_message: 'Hello.',
      selected_tools: [{ type: 'transfer_call', mode: 'warm', transfer_destinations: [{ phone_number: WARM_TO, description: 'Billing' }, { phone_number: COLD_TO, mode: 'cold', description: 'Sales' }] }],
    })).data.id;
    const phone = '+14155550180';
    await api('POST', '/api/v1/phone-numbers/import', { phone, type: 'pstn', inbound_agent_id: agent });
    twilio.adopt(phone, { voiceUrl: `${platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${platform.url}/api/v1/telephony/twilio/status` });

    /** One call transferred to `to`: the platform's added time to the ring (warm) or to the <Dial> answer (cold), and the action's own part. */
    const transfer = async (to: string, i: number) => {
      const call = await twilio.incomingCall(`+1415666${String(1000 + (i % 9000)).padStart(4, '0')}`, phone);
      const first = timings.length;
      model.script({ toolCalls: [{ name: 'transfer_call', arguments: { phone_number: to } }] }, { text: 'Connecting you now.' }, ...(to === WARM_TO ? [{ text: 'A caller about a bill.' }] : []));
      const placedBefore = twilio.placedTo(WARM_TO).length;
      call.relay!.say('A person, please.');
      const deadline = Date.now() + 10_000;
      const done = () => (to === WARM_TO ? twilio.placedTo(WARM_TO).length > placedBefore && (call.actions?.length ?? 0) > 0 : (call.actions?.length ?? 0) > 0);
      while (!done()) {
        if (Date.now() > deadline) throw new Error(`the transfer to ${to} did not happen: ${JSON.stringify(call.actions ?? call.failures ?? null)}`);
        await new Promise((r) => setTimeout(r, 1));
      }
      const [tool, reply] = [timings[first]!, timings[first + 1]!];
      const action = call.actions![0]!;
      const reached = to === WARM_TO ? twilio.placedTo(WARM_TO).at(-1)!.placed!.at : action.answeredAt;
      const added = reply.arrived - tool.finished + (action.sentAt - reply.finished) + (reached - action.sentAt);
      await call.after?.catch(() => undefined);
      await twilio.hangUp(call.sid);
      if (process.env.BENCH_DEBUG) console.error(to, (reply.arrived - tool.finished).toFixed(1), (action.sentAt - reply.finished).toFixed(1), (reached - action.sentAt).toFixed(1));
      // End to end: the tool call's answer to the person's Calls.json, the stand-in's own hop from `end` to the action included, the reply's model time not.
      const e2e = reached - tool.finished - (reply.finished - reply.arrived);
      return { added, action: reached - action.sentAt, turn: reply.arrived - tool.finished + (action.sentAt - reply.finished), e2e, answer: action.answeredAt - action.sentAt };
    };
    type Row = { added: number; action: number; turn: number; e2e: number; answer: number };
    const rows = { warm: [] as Row[], cold: [] as Row[] };
    for (let i = 0; i < WARMUP + TRANSFERS; i++) {
      const c = await transfer(COLD_TO, 2 * i);
      const w = await transfer(WARM_TO, 2 * i + 1);
      if (i < WARMUP) continue;
      rows.cold.push(c);
      rows.warm.push(w);
    }
    const col = (xs: Row[], k: keyof Row) => xs.map((x) => x[k]);
    const p50 = pct(col(rows.warm, 'added'), 50);
    return [
      '## Warm transfer',
      '',
      `The platform's added time from the model's \`transfer_call\` to the person's phone ringing, on the relay pipeline of the local runtime (DynamoDB Local in memory, the relay's routes and the \`<Connect action>\` as their Lambda handlers, the Twilio stand-in, a stand-in model behind a timing proxy); ${TRANSFERS} transfers of each kind after ${WARMUP} warm-up, interleaved, each a new call. Counted: the tool call's answer to the reply's model request, the reply's answer to the session's \`end\`, and the \`<Connect action>\` to the carrier's \`Calls.json\` request for the person (the conversation so far onto the call, the transfer and \`call.transfer_started\` written, the dial). Not counted: the model's own time (both requests), Twilio's (from \`end\` to the action, from \`Calls.json\` to the ring); the briefing's model request runs beside the dial. \`npx tsx bench/warm-transfer.ts\`.`,
      '',
      '| | p50 | p95 |',
      '|---|---|---|',
      `| Cold transfer (baseline, today's path): tool call → the action's \`<Dial>\` answered | ${f(pct(col(rows.cold, 'added'), 50))} | ${f(pct(col(rows.cold, 'added'), 95))} |`,
      `| Warm transfer: the turn's part (tool call → \`end\`) | ${f(pct(col(rows.warm, 'turn'), 50))} | ${f(pct(col(rows.warm, 'turn'), 95))} |`,
      `| Warm transfer: the action's part (\`<Connect action>\` → the person's call placed) | ${f(pct(col(rows.warm, 'action'), 50))} | ${f(pct(col(rows.warm, 'action'), 95))} |`,
      `| **Warm transfer: tool call → the person's phone ringing, platform-added** | **${f(p50)}** | ${f(pct(col(rows.warm, 'added'), 95))} |`,
      `| Warm transfer: tool call → the person's phone ringing, end to end through the \`<Connect action>\` (the stand-in's hop from \`end\` to the action included; the model's time not) | ${f(pct(col(rows.warm, 'e2e'), 50))} | ${f(pct(col(rows.warm, 'e2e'), 95))} |`,
      `| Warm transfer: \`<Connect action>\` → the caller's conference TwiML answered (issue 42: answered without waiting for the briefing) | ${f(pct(col(rows.warm, 'answer'), 50))} | ${f(pct(col(rows.warm, 'answer'), 95))} |`,
      '',
      `Goal (issue 37): platform-added time from the tool call to the person's phone ringing ≤ 50 ms p50 — ${p50 <= 50 ? 'met' : 'NOT met'} (${f(p50)}; the cold transfer's path to its \`<Dial>\`, measured beside it, is ${f(pct(col(rows.cold, 'added'), 50))}).`,
      '',
    ].join('\n');
  } finally {
    await platform.stop();
    await twilio.close();
    await model.close();
    await new Promise((r) => proxy.close(r));
  }
}

if (require.main === module) {
  warmTransferBenchmark().then((s) => console.log(s), (err) => {
    console.error(err);
    process.exit(1);
  });
}

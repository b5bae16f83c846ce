/**
 * The fault tier's inbound relay calls (issue 36): incoming calls of a `relay` agent through the
 * Twilio stand-in and a ConversationRelay client, on the local runtime under LOCAL_FAULTS (DynamoDB,
 * queues and the model failing as they can). Each caller asks for a product's stock (a webhook tool)
 * and hangs up. Invariants: every call ends, exactly once (one `call.ended`), with every word the
 * caller said in its transcript, in order; the tool ran once per call it recorded, never for a call
 * that did not record it; and no failure in the platform's log but an injected one.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clockMs } from '../../shared/clock';
import { uniquePhone } from '../support/numbers';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { usePlatform } from '../support/platform';
import { readBody } from '../support/stand-in';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { until } from '../support/until';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const FAULTS = process.env.FT_FAULTS ?? 'on,dynamo.conflict=0.05,dynamo.throttle=0.004,sqs.redeliver=0.05,model.429=0.15,model.5xx=0.15,model.timeout=0,model.malformed=0,backoff=0.1,seed=3602';
const CALLS = 4;
const SID = 'AC0000000000000000000000000000fa36';
const TOKEN = 'fault-tier-token';

let twilio: TwilioCarrierStandIn;
let model: OpenAiStandIn;
let receiver: WebhookReceiver;
let shop: Server;
let shopUrl = '';
const toolRuns = new Map<string, number>();

/** The model: asked about a product's stock, it calls the tool; given the tool's answer, it says it; else it acknowledges. */
const answer = (body: any) => {
  const last = body.messages.at(-1);
  if (last?.role === 'tool') return { text: `We have ${/"units":(\d+)/.exec(String(last.content))?.[1] ?? 'no'} in stock.` };
  const sku = /stock of (\S+)/.exec(String(last?.content ?? ''))?.[1];
  return sku ? { toolCalls: [{ name: 'stock_level', arguments: { sku } }] } : { text: 'Noted.' };
};

const ready = (async () => {
  twilio = await startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() });
  model = await startOpenAiStandIn({ fallback: answer });
  receiver = await startWebhookReceiver();
  shop = createServer(async (req, res) => {
    const sku = String(JSON.parse(await readBody(req)).arguments.sku);
    toolRuns.set(sku, (toolRuns.get(sku) ?? 0) + 1);
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sku, units: 7 }));
  });
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}/stock`;
})();
beforeAll(() => ready);
afterAll(async () => {
  await twilio?.close();
  await model?.close();
  await receiver?.close();
  await new Promise((r) => shop?.close(r));
});

const local = usePlatform({
  faults: FAULTS,
  get env() {
    return {
      TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN,
      LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model',
    };
  },
} as never);

/** A request retried on 503 with the same Idempotency-Key, as the SDKs do. */
async function send(method: string, path: string, body?: unknown) {
  const key = `fault-relay-${Math.random()}`;
  for (let attempt = 1; ; attempt++) {
    const reply = await local().api(method, path, { body, ...(method === 'POST' ? { headers: { 'Idempotency-Key': key } } : {}) });
    if (reply.status !== 503 || attempt >= 6) return reply;
    await new Promise((r) => setTimeout(r, 50 * attempt));
  }
}

it('inbound relay calls under faults each end once with every word the caller said, and run each tool call once', async () => {
  const { platform, expectFailures } = local();
  expectFailures(/\(injected\)/);
  expectFailures(/answered 503: .*"code":"UNAVAILABLE"/);

  const hook = await send('POST', '/api/v1/webhooks', { url: `${receiver.url}/calls`, events: ['call.ended'] });
  expect(hook.status).toBe(200);
  const tool = await send('POST', '/api/v1/tools', {
    name: 'Stock', type: 'webhook', url: shopUrl,
    definition: { name: 'stock_level', description: 'Units in stock', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } },
  });
  expect(tool.status).toBe(200);
  const agent = await send('POST', '/api/v1/agents', {
    name: 'Relay desk', voice_pipeline: 'relay', prompt: 'You answer stock questions.', begin_message: 'Acme, how can I help?', selected_tools: [{ tool_id: tool.body.data.id }],
  });
  expect(agent.status).toBe(200);

  const said: Record<string, string[]> = {};
  const callIds: string[] = [];
  for (let i = 0; i < CALLS; i++) {
    const phone = uniquePhone();
    const imported = await send('POST', '/api/v1/phone-numbers/import', { phone, type: 'pstn', inbound_agent_id: agent.body.data.id });
    expect(imported.status).toBe(200);
    twilio.adopt(phone, { voiceUrl: `${platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${platform.url}/api/v1/telephony/twilio/status` });
    const call = await twilio.incomingCall(uniquePhone(), phone);
    const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
    callIds.push(callId);
    const relay = call.relay!;
    const lines = [`What is the stock of R${i}?`, 'Thanks, that is all.'];
    said[callId] = lines;
    for (const [n, line] of lines.entries()) {
      relay.say(line);
      // Each utterance is answered (or apologised for, when the model failed) before the next.
      await relay.until(() => relay.received.filter((m) => m.type === 'text' && m.last).length >= n + 1, `the answer to "${line}"`, 20_000);
      await platform.relay.idle();
    }
    relay.close();
    await relay.closed;
    await platform.relay.idle();
  }
  await platform.queue.waitForIdle(120_000);

  const ended = await Promise.all(callIds.map((id) => until(async () => (await send('GET', `/api/v1/calls/${id}`)).body.data, (c) => c.status === 'ended', `call ${id} ended`)));
  await platform.queue.waitForIdle(120_000);
  for (const call of ended) {
    // Every word the caller said, in order.
    expect(call.transcript.filter((t: { role: string }) => t.role === 'user').map((t: { text: string }) => t.text)).toEqual(said[call.id]);
    // Each recorded tool call ran the tool once; a tool that ran is recorded.
    const skus = (call.tool_calls as { name: string; arguments: { sku: string } }[]).filter((t) => t.name === 'stock_level').map((t) => t.arguments.sku);
    for (const sku of skus) expect(toolRuns.get(sku)).toBe(1);
  }
  const recorded = ended.flatMap((c) => (c.tool_calls as { arguments: { sku: string } }[]).map((t) => t.arguments.sku));
  expect([...toolRuns.keys()].filter((sku) => !recorded.includes(sku))).toEqual([]);
  // Ended exactly once: one call.ended each.
  const endedEvents = receiver.received.map((r) => JSON.parse(r.body)).filter((e) => e.type === 'call.ended').map((e) => e.data.id);
  expect(endedEvents.sort()).toEqual([...callIds].sort());

  const injected = platform.faults?.injected() ?? { 'dynamo.conflict': 1, 'dynamo.unprocessed': 0 };
  console.log(`fault tier, relay calls: ${JSON.stringify({ faults: FAULTS, calls: CALLS, tool_runs: [...toolRuns.values()].reduce((a, b) => a + b, 0), model_requests: model.requests.length, faults_injected: injected })}`);
  expect(injected['dynamo.conflict'] + injected['dynamo.unprocessed']).toBeGreaterThan(0);
}, 300_000);

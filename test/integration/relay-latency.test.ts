/**
 * Where each reply's time goes on a relay (ConversationRelay) call (docs/api.md, "Latency of every
 * reply"; issue 43): an inbound call from the Twilio stand-in, the ConversationRelay client, a
 * model stand-in that waits known times and a webhook tool that answers late. Every figure is
 * taken on the relay function's one clock; each bound holds whatever the machine's speed.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clockMs } from '../../shared/clock';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { until } from '../support/until';

const SID = 'AC0000000000000000000000000000fe43';
const TOKEN = 'relay-latency-token';
const MODEL_WAIT_MS = 150;
const TOOL_WAIT_MS = 200;
let twilio: TwilioCarrierStandIn;
let model: OpenAiStandIn;
let shop: Server;
let shopUrl = '';

const ready = (async () => {
  twilio = await startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() });
  model = await startOpenAiStandIn();
  shop = createServer((req, res) => {
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ units: 7 })), TOOL_WAIT_MS));
  });
  await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
  shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}/stock`;
})();
beforeAll(() => ready);
afterAll(async () => {
  await twilio?.close();
  await model?.close();
  await new Promise((r) => shop?.close(r));
});

const local = usePlatform({
  get env() {
    return {
      TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: twilio.url, TWILIO_PRICING_BASE: twilio.url, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN,
      LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model', ALLOW_LOOPBACK_FETCH: 'true',
    };
  },
} as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);
const sum = (l: any) => l.model + l.tools + l.knowledge_base + l.platform;

it('times each relay reply from the final prompt to its first token on the socket: the model\'s wait, the tool\'s, the rest; the call\'s latency once ended', async () => {
  const tool = await api('POST', '/api/v1/tools', {
    body: { name: 'Stock', type: 'webhook', url: shopUrl, definition: { name: 'stock_level', description: 'Units in stock', parameters: { type: 'object', properties: {} } } },
  });
  expect(tool.status).toBe(200);
  const agent = await api('POST', '/api/v1/agents', {
    body: { name: 'Relay desk', voice_pipeline: 'relay', voice_id: 'Google.en-GB-Neural2-A', begin_message: 'Acme, hello.', selected_tools: [{ tool_id: tool.body.data.id }, { type: 'end_call' }] },
  });
  expect(agent.status).toBe(200);
  const phone = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', inbound_agent_id: agent.body.data.id } })).status).toBe(200);
  twilio.adopt(phone, { voiceUrl: `${local().platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${local().platform.url}/api/v1/telephony/twilio/status` });
  const call = await twilio.incomingCall(uniquePhone(), phone);
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  const relay = call.relay!;

  model.script(
    { text: 'We open at nine.', delayMs: MODEL_WAIT_MS },
    { toolCalls: [{ name: 'stock_level' }], delayMs: MODEL_WAIT_MS },
    { text: 'We have 7 in stock.' },
    { toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] },
    { text: 'Goodbye!' },
  );
  relay.say('When do you open?');
  await relay.until(() => relay.replies().length === 1, 'the first answer');
  relay.say('Is the kettle in stock?');
  await relay.until(() => relay.replies().length === 2, 'the stock answer');
  relay.say('Bye.');
  await relay.closed;

  const ended = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && c.transcript?.length >= 7, 'the call ended with its transcript');
  const agentLines = ended.transcript.filter((t: any) => t.role === 'agent');
  expect(agentLines.map((t: any) => t.text)).toEqual(['Acme, hello.', 'We open at nine.', 'We have 7 in stock.', 'Goodbye!']);
  const [greeting, first, stock, bye] = agentLines;
  expect(greeting.latency_ms).toBeUndefined();
  expect(first.latency_ms.model).toBeGreaterThanOrEqual(MODEL_WAIT_MS);
  expect(first.latency_ms.tools).toBe(0);
  expect(sum(first.latency_ms)).toBe(first.latency_ms.e2e);
  expect(stock.latency_ms.model).toBeGreaterThanOrEqual(MODEL_WAIT_MS);
  expect(stock.latency_ms.tools).toBeGreaterThanOrEqual(TOOL_WAIT_MS);
  expect(sum(stock.latency_ms)).toBe(stock.latency_ms.e2e);
  expect(bye.latency_ms).toBeDefined();
  expect(ended.latency.e2e.num).toBe(3);
  expect(ended.latency.tools.max).toBe(Math.max(stock.latency_ms.tools, bye.latency_ms.tools));
});

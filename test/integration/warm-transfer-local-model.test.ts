/**
 * A simulated call's warm transfer with a real conversation model (a Chat Completions stand-in):
 * the briefing is the model's, asked with the conversation until the agent said it is connecting
 * the caller (calls/simulated-transfer.ts passes it to startWarmTransfer), as on Twilio
 * (docs/api.md, "Warm transfer"). Under a manual clock, through the HTTP API.
 */
import { ManualClock } from '../../shared/local/clock';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';

const clock = new ManualClock(Date.now());
let model: OpenAiStandIn;
const ready = startOpenAiStandIn().then((m) => (model = m));
beforeAll(() => ready);
afterAll(() => model?.close());
const local = usePlatform({
  clock,
  queueTimeScale: 1,
  get env() {
    return { LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model', SIMULATED_CALL_SECONDS: '20' };
  },
} as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const BILLING = '+14155550171';
const BRIEFING = 'Dana was charged twice for order 1042 and wants the duplicate refunded.';
const systemOf = (body: any): string => body.messages.find((m: any) => m.role === 'system')?.content ?? '';

it('the briefing is the conversation model\'s, asked with what the caller said before the transfer', async () => {
  const agent = await api('POST', '/api/v1/agents', {
    body: { name: 'Warm desk', prompt: 'You are the front desk of Acme.', begin_message: 'Acme, how can I help?', selected_tools: [{ type: 'transfer_call', mode: 'warm', transfer_destinations: [{ phone_number: BILLING, description: 'Billing desk' }] }] },
  });
  expect(agent.status).toBe(200);
  const number = await api('POST', '/api/v1/phone-numbers/import', { body: { phone: uniquePhone(), type: 'pstn' } });
  // Each answer chosen from the request: the briefing's (its own system prompt), the turn after the tool, the caller's lines.
  model.script(...Array.from({ length: 6 }, () => (body: any) => {
    if (systemOf(body).startsWith('You brief a person')) return { text: BRIEFING };
    if (body.messages.at(-1).role === 'tool') return { text: 'Let me connect you with our billing desk.' };
    const said = body.messages.at(-1).content as string;
    if (said.includes('order 1042')) return { toolCalls: [{ name: 'transfer_call', arguments: { phone_number: BILLING, reason: 'double charge' } }] };
    return { text: 'Unexpected.' };
  }));
  const placed = await api('POST', '/api/v1/calls', {
    body: { agent_id: agent.body.data.id, from_phone_number: number.body.data.phone_number, to_phone_number: `${uniquePhone().slice(0, -1)}0`, metadata: { simulated_caller: ['I was charged twice for order 1042, can I talk to billing?', 'Hello?'] } },
  });
  expect(placed.status).toBe(200);
  const queue = local().platform.queue;
  await queue.drain();
  for (let s = 0; s < 25; s++) {
    clock.advance(1_000);
    await queue.drain();
  }
  const call = (await api('GET', `/api/v1/calls/${placed.body.data.id}`)).body.data;
  expect(call).toMatchObject({ status: 'ended', disconnection_reason: 'transferred', transfers: [{ phone_number: BILLING, outcome: 'connected', briefing: BRIEFING }] });
  const asked = model.requests.find((r) => systemOf(r.body).startsWith('You brief a person'))!;
  const prompt = asked.body.messages.at(-1).content as string;
  expect(prompt).toContain('Caller: I was charged twice for order 1042, can I talk to billing?');
  expect(prompt).toContain('Agent: Let me connect you with our billing desk.');
  expect(prompt).toContain('Transferred to: Billing desk');
  expect(call.transcript.filter((t: any) => t.role === 'system').map((t: any) => t.text)).toEqual([
    `Warm transfer to ${BILLING}: briefing: ${BRIEFING}`,
    `Warm transfer to ${BILLING}: connected: the person accepted; the caller is connected to them and the agent left the call`,
  ]);
});

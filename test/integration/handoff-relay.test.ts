/**
 * Agent-to-agent hand-off on a ConversationRelay call (issue 37 item 2): an inbound relay call
 * handed from the desk to billing and back, on the local runtime against the Twilio stand-in, a
 * ConversationRelay stand-in client and a stand-in Chat Completions model (relay.test.ts's setup).
 * Each reply comes from the agent the call is with: its prompt and tools; the call keeps its
 * segments, the events say who handed to whom, and the call's voice stays the session's.
 */
import { uniquePhone } from '../support/numbers';
import { useTwilioRelayPlatform } from '../support/twilio-relay-platform';
import { until } from '../support/until';

const { local, twilio: twilioOf, model: modelOf } = useTwilioRelayPlatform('AC0000000000000000000000000000fe37', 'handoff-relay-token');
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const systemOf = (body: any): string => body.messages.find((m: any) => m.role === 'system')?.content ?? '';
const toolsOf = (body: any): string[] => (body.tools ?? []).map((t: any) => t.function.name);
const handOff = (agentId: string, reason: string) => ({ toolCalls: [{ name: 'handoff_to_agent', arguments: { agent_id: agentId, reason } }] });

async function agent(body: Record<string, unknown>): Promise<string> {
  const res = await api('POST', '/api/v1/agents', { body: { voice_pipeline: 'relay', ...body } });
  expect(res.status).toBe(200);
  return res.body.data.id;
}

it('hands a relay call from the desk to billing and back: each reply from the agent the call is with, segments on the call, conversation.handed_off events', async () => {
  const model = modelOf();
  const twilio = twilioOf();
  const billing = await agent({ name: 'Billing', agent_name: 'Bea', prompt: 'You are {{agent_name}}, billing.', voice_id: 'Google.en-US-Neural2-F' });
  const desk = await agent({
    name: 'Desk', agent_name: 'Ava', prompt: 'You are {{agent_name}}, front desk.', begin_message: 'Acme, {{agent_name}} speaking.', voice_id: 'Google.en-GB-Neural2-A',
    selected_tools: [{ type: 'end_call' }], handoff_agents: [{ agent_id: billing, description: 'Billing questions' }],
  });
  expect((await api('PATCH', `/api/v1/agents/${billing}`, { body: { handoff_agents: [{ agent_id: desk, description: 'Everything else' }] } })).status).toBe(200);
  const phone = uniquePhone();
  expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', inbound_agent_id: desk } })).status).toBe(200);
  twilio.adopt(phone, { voiceUrl: `${local().platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${local().platform.url}/api/v1/telephony/twilio/status` });

  model.reset();
  model.script(
    handOff(billing, 'invoice'),
    (body) => ({ text: `${systemOf(body)} Which invoice?` }),
    (body) => ({ text: `${systemOf(body)} Invoice 42 is paid.` }),
    handOff(desk, 'not billing'),
    (body) => ({ text: `${systemOf(body)} Anything else?` }),
    { toolCalls: [{ name: 'end_call', arguments: {} }] },
    { text: 'Goodbye!' },
  );
  const call = await twilio.incomingCall(uniquePhone(), phone);
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  // The voice is the session's (the TwiML's), whoever answers later.
  expect(call.twiml).toContain('voice="Google.en-GB-Neural2-A"');
  const relay = call.relay!;
  relay.say('My invoice, please.');
  await relay.until(() => relay.replies().length === 1, 'billing answers');
  relay.say('Invoice 42.');
  await relay.until(() => relay.replies().length === 2, 'billing answers again');
  relay.say('And a desk question.');
  await relay.until(() => relay.replies().length === 3, 'the desk answers');
  relay.say('That is all, bye.');
  await relay.closed;
  expect(relay.replies()).toEqual([
    'You are Bea, billing. Which invoice?',
    'You are Bea, billing. Invoice 42 is paid.',
    'You are Ava, front desk. Anything else?',
    'Goodbye!',
  ]);
  // Billing's requests offered its own tools (no end_call; its hand-off back to the desk).
  const requests = model.requests.map((r) => r.body);
  expect(toolsOf(requests[1])).toEqual(['handoff_to_agent']);
  expect(toolsOf(requests[4])).toEqual(['end_call', 'handoff_to_agent']);

  const ended = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && c.transcript?.length > 0, 'the call ended');
  expect(ended.agent_id).toBe(desk);
  expect(ended.segments.map((s: any) => [s.agent_id, s.reason])).toEqual([[desk, null], [billing, 'invoice'], [desk, 'not billing']]);
  expect(ended.transcript.map((t: any) => t.text)).toEqual(expect.arrayContaining(['You are Bea, billing. Which invoice?', 'You are Ava, front desk. Anything else?']));
  expect(ended.tool_calls.map((t: any) => t.name)).toEqual(['handoff_to_agent', 'handoff_to_agent', 'end_call']);
  const events = (await api('GET', '/api/v1/events?type=conversation.handed_off&limit=100')).body.data.filter((e: any) => e.data.conversation.id === callId).reverse();
  expect(events.map((e: any) => [e.data.conversation.type, e.data.from.agent_id, e.data.to.agent_id, e.data.reason])).toEqual([['call', desk, billing, 'invoice'], ['call', billing, desk, 'not billing']]);
});

/**
 * Voice with any language model (issue 28): calls of a `relay` agent end to end on the local
 * runtime, against the Twilio stand-in (REST, incoming calls, status callbacks), a ConversationRelay
 * stand-in client speaking Twilio's documented messages (test/support/relay-client.ts) and a
 * stand-in Chat Completions model. The relay's routes are the registry's WebSocket handlers, served
 * by the local runtime on /relay as API Gateway would serve them.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { clockMs, installTimeSource } from '../../shared/clock';
import { keys } from '../../shared/db/keys';
import { RELAY_APOLOGY, RELAY_TIME_UP } from '../../shared/domain/relay/session';
import { uniquePhone } from '../support/numbers';
import { usePlatform } from '../support/platform';
import { startOpenAiStandIn, type OpenAiStandIn } from '../support/openai-stand-in';
import { RelayClient } from '../support/relay-client';
import { readBody } from '../support/stand-in';
import { startTwilioCarrier, type TwilioCarrierStandIn } from '../support/twilio-carrier';
import { until } from '../support/until';

const SID = 'AC0000000000000000000000000000fe28';
const TOKEN = 'relay-auth-token';
let twilio: TwilioCarrierStandIn;
let model: OpenAiStandIn;
let shop: Server;
let shopUrl = '';
const stockRequests: any[] = [];

const ready = (async () => {
  twilio = await startTwilioCarrier({ accountSid: SID, authToken: TOKEN, now: () => clockMs() });
  model = await startOpenAiStandIn();
  shop = createServer(async (req, res) => {
    const asked = JSON.parse(await readBody(req));
    stockRequests.push(asked);
    // A `big-` sku answers 15 KB (a long call's tool results), anything else a line.
    const big = String(asked.arguments?.sku ?? '').startsWith('big-');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sku: 'kettle', units: 7, ...(big ? { notes: 'n'.repeat(15 * 1024) } : {}) }));
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
      LLM_PROVIDER: 'openai', LLM_BASE_URL: model.url, LLM_API_KEY: 'sk-stand-in', LLM_MODEL: 'stand-in-model',
    };
  },
} as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const lastUser = (body: any): string => [...body.messages].reverse().find((m: any) => m.role === 'user')?.content ?? '';
const attr = (twiml: string, name: string) => twiml.match(new RegExp(` ${name}="([^"]*)"`))?.[1];

/** A relay agent with a knowledge base (refunds), a webhook tool (stock) and end_call. */
async function relayAgent(extra: Record<string, unknown> = {}) {
  const kb = await api('POST', '/api/v1/rag/knowledge-bases', { body: { name: 'Help', description: 'Help centre' } });
  const kbId = kb.body.data.id;
  await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId, doc_id: `refunds-${kbId.slice(-8)}`, title: 'Refunds', text: 'Refunds reach your card within five business days of the return arriving at our warehouse.' } });
  await local().platform.queue.waitForIdle();
  const tool = await api('POST', '/api/v1/tools', {
    body: { name: 'Stock', type: 'webhook', url: shopUrl, definition: { name: 'stock_level', description: 'Units in stock', parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] } } },
  });
  expect(tool.status).toBe(200);
  const agent = await api('POST', '/api/v1/agents', {
    body: {
      name: 'Relay desk', agent_name: 'Ava', voice_pipeline: 'relay', voice_id: 'Google.en-GB-Neural2-A', language: 'en-GB',
      prompt: 'You are {{agent_name}} of Acme.', begin_message: 'Thanks for calling Acme, {{agent_name}} speaking.', knowledge_base: kbId,
      selected_tools: [{ tool_id: tool.body.data.id }, { type: 'end_call' }], ...extra,
    },
  });
  expect(agent.status).toBe(200);
  expect(agent.body.data).toMatchObject({ voice_pipeline: 'relay', language: 'en-GB' });
  return agent.body.data.id as string;
}

/**
 * A number the test owns (imported, no other file can hold it), its calls answered by `agentId`,
 * and Twilio told where its calls and their statuses go (a number the account holds already).
 */
async function ownNumber(agentId?: string): Promise<string> {
  const phone = uniquePhone();
  const imported = await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', ...(agentId ? { inbound_agent_id: agentId } : {}) } });
  expect(imported.status).toBe(200);
  twilio.adopt(phone, { voiceUrl: `${local().platform.url}/api/v1/telephony/twilio/inbound`, statusCallback: `${local().platform.url}/api/v1/telephony/twilio/status` });
  return phone;
}

/** An incoming call to a fresh number of `agentId`: the call, its id, and its ConversationRelay session. */
async function callIn(agentId: string, from = uniquePhone()) {
  const call = await twilio.incomingCall(from, await ownNumber(agentId));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
  return { call, callId, relay: call.relay! };
}

const endedCall = (callId: string) => until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && c.transcript?.length > 0, 'the call ended with its transcript');

/** The conversation every call plays: a knowledge-base answer, a webhook tool, an interruption, a keypress, then end_call. */
async function converse(relay: RelayClient) {
  model.script(
    (body) => ({ text: JSON.stringify(body).includes('five business days') ? 'Refunds take five business days.' : 'I do not know.' }),
    { toolCalls: [{ name: 'stock_level', arguments: { sku: 'kettle' } }] },
    (body) => ({ text: body.messages.some((m: any) => m.role === 'tool' && m.content.includes('"units":7')) ? 'We have 7 kettles in stock.' : 'No stock answer.' }),
    { text: 'Our kettles boil water in two minutes, come in four colours, and carry a two year warranty.' },
    (body) => ({ text: lastUser(body) === 'The caller pressed 5 on their keypad.' ? 'You pressed five: the warranty desk.' : `Unexpected: ${lastUser(body)}` }),
    { toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] },
    { text: 'Goodbye!' },
  );
  relay.say('How long do refunds take?');
  await relay.until(() => relay.replies().length === 1, 'the refunds answer');
  relay.say('Is the kettle in stock?');
  await relay.until(() => relay.replies().length === 2, 'the stock answer');
  relay.say('Tell me about the kettle.');
  await relay.until(() => relay.replies().length === 3, 'the long answer');
  relay.interrupt('Our kettles boil water');
  await local().platform.relay.idle();
  relay.press('5');
  await relay.until(() => relay.replies().length === 4, 'the keypress answer');
  relay.say('That is all, bye.');
  await relay.closed;
  return relay.replies();
}

function expectConversation(call: any, replies: string[]) {
  expect(replies).toEqual([
    'Refunds take five business days.',
    'We have 7 kettles in stock.',
    'Our kettles boil water in two minutes, come in four colours, and carry a two year warranty.',
    'You pressed five: the warranty desk.',
    'Goodbye!',
  ]);
  expect(call.transcript.map((t: any) => [t.role, t.text, t.interrupted ?? false])).toEqual([
    ['agent', 'Thanks for calling Acme, Ava speaking.', false],
    ['user', 'How long do refunds take?', false],
    ['agent', 'Refunds take five business days.', false],
    ['user', 'Is the kettle in stock?', false],
    ['agent', 'We have 7 kettles in stock.', false],
    ['user', 'Tell me about the kettle.', false],
    ['agent', 'Our kettles boil water', true],
    ['user', '(pressed 5)', false],
    ['agent', 'You pressed five: the warranty desk.', false],
    ['user', 'That is all, bye.', false],
    ['agent', 'Goodbye!', false],
  ]);
  expect(call.tool_calls.map((t: any) => [t.name, t.arguments])).toEqual([['stock_level', { sku: 'kettle' }], ['end_call', { reason: 'done' }]]);
  expect(call.tool_calls[0].result).toEqual({ sku: 'kettle', units: 7 });
}

it('answers an inbound call of a relay agent through ConversationRelay: greeting, knowledge base, webhook tool, interruption, keypress, end_call; the call ends with its transcript and call.ended', async () => {
  const agentId = await relayAgent();
  const call = await twilio.incomingCall(uniquePhone(), await ownNumber(agentId));
  expect(call.twiml).toMatch(/<Connect action="[^"]*"><ConversationRelay [^>]*>.*<\/ConversationRelay><\/Connect>/);
  expect(attr(call.twiml, 'welcomeGreeting')).toBe('Thanks for calling Acme, Ava speaking.');
  expect(attr(call.twiml, 'voice')).toBe('Google.en-GB-Neural2-A');
  expect(attr(call.twiml, 'language')).toBe('en-GB');
  expect(attr(call.twiml, 'dtmfDetection')).toBe('true');
  expect(attr(call.twiml, 'url')).toMatch(new RegExp(`^${local().platform.relay.url}\\?token=`));
  const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;

  const replies = await converse(call.relay!);
  expect(model.requests.every((r) => r.body.model === 'stand-in-model')).toBe(true);
  expect(call.relay!.refused).toEqual([]);
  expect(call.relay!.received.at(-1)).toEqual({ type: 'end', handoffData: JSON.stringify({ reasonCode: 'end-call' }) });
  expect(stockRequests.at(-1)).toMatchObject({ name: 'stock_level', arguments: { sku: 'kettle' } });

  await local().platform.relay.idle();
  await local().platform.queue.waitForIdle();
  const ended = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && c.transcript?.length > 0, 'the call ended with its transcript');
  expect(ended).toMatchObject({ direction: 'inbound', disconnection_reason: expect.any(String) });
  expectConversation(ended, replies);
  const events = (await api('GET', '/api/v1/events?type=call.ended&limit=100')).body.data.filter((e: any) => e.data?.id === callId);
  expect(events).toHaveLength(1);
  expect(events[0].data.transcript).toHaveLength(11);
});

it('places an outbound call of a relay agent: Twilio fetches ConversationRelay TwiML and the call ends with its transcript', async () => {
  const agentId = await relayAgent({ start_speaker: 'agent' });
  const to = uniquePhone();
  const created = await api('POST', '/api/v1/calls', { body: { agent_id: agentId, from_phone_number: await ownNumber(), to_phone_number: to } });
  expect(created.status).toBe(200);
  const callId = created.body.data.id;
  await local().platform.queue.waitForIdle();
  const placed = [...twilio.calls.values()].find((c) => c.placed && c.to === to && c.status === 'queued');
  expect(placed).toBeDefined();
  const call = await twilio.answer(placed!.sid);
  expect(attr(call.twiml, 'welcomeGreeting')).toBe('Thanks for calling Acme, Ava speaking.');

  const replies = await converse(call.relay!);
  await local().platform.relay.idle();
  await local().platform.queue.waitForIdle();
  const ended = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && c.transcript?.length > 0, 'the call ended with its transcript');
  expect(ended.direction).toBe('outbound');
  expectConversation(ended, replies);
  expect((await api('GET', '/api/v1/events?type=call.ended&limit=100')).body.data.filter((e: any) => e.data?.id === callId)).toHaveLength(1);
});

it('admits a relay connection only with a valid, unused token', async () => {
  const bad = await RelayClient.connect(`${local().platform.relay.url}?token=forged`, { callSid: 'CA1', customParameters: {} }).catch((err) => err);
  expect(bad.status).toBe(401);
  const none = await RelayClient.connect(local().platform.relay.url, { callSid: 'CA1', customParameters: {} }).catch((err) => err);
  expect(none.status).toBe(401);
});

/** A promise and its resolve. */
function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

it('streams each reply\'s tokens to Twilio as the model produces them (text before a tool call included), and an interruption mid-reply stops its tokens: the transcript keeps the words heard', async () => {
  const { callId, relay } = await callIn(await relayAgent());
  const texts = (from: number) => relay.received.slice(from).filter((m) => m.type === 'text');
  const platform = local().platform;

  // 1. The model holds the rest of its reply until the caller's side has the first token: tokens go out as they come.
  let from = relay.received.length;
  const firstToken = relay.until(() => texts(from).length > 0, 'the first token before the model finished');
  model.script({ text: 'Refunds take five business days.', pieces: ['Refunds ', 'take five ', 'business days.'], holdUntil: firstToken });
  relay.say('How long do refunds take?');
  await firstToken;
  expect(texts(from)).toEqual([{ type: 'text', token: 'Refunds ', last: false }]);
  await relay.until(() => relay.replies().length === 1, 'the refunds answer');
  expect(texts(from).map((m) => [m.token, m.last])).toEqual([['Refunds ', false], ['take five ', false], ['business days.', false], ['', true]]);

  // 2. Text before a tool call reaches the caller before the tool runs; the text after it continues the same reply.
  from = relay.received.length;
  const stockBefore = stockRequests.length;
  const heardBeforeTool = relay.until(() => texts(from).length > 0, 'the words before the tool call');
  model.script(
    { text: 'Let me check.', pieces: ['Let me ', 'check.'], holdUntil: heardBeforeTool, toolCalls: [{ name: 'stock_level', arguments: { sku: 'kettle' } }] },
    { text: 'We have 7 kettles.' },
  );
  relay.say('Is the kettle in stock?');
  await heardBeforeTool;
  expect(stockRequests.length).toBe(stockBefore);
  await relay.until(() => relay.replies().length === 2, 'the stock answer');
  expect(relay.replies()[1]).toBe('Let me check. We have 7 kettles.');
  expect(stockRequests.length).toBe(stockBefore + 1);
  expect(texts(from).filter((m) => m.last)).toHaveLength(1);

  // 3. The caller speaks over a reply still streaming: its remaining tokens never go out.
  from = relay.received.length;
  const interrupted = deferred();
  model.script({ text: 'Our kettles boil water in two minutes and come in four colours.', pieces: ['Our kettles ', 'boil water ', 'in two minutes ', 'and come in four colours.'], holdUntil: interrupted.promise });
  relay.say('Tell me about the kettle.');
  await relay.until(() => texts(from).length > 0, 'the long answer\'s first token');
  const handled = platform.relay.handled;
  relay.interrupt('Our kettles');
  await platform.relay.untilHandled(handled + 1); // the interrupt's own handling (the turn still runs)
  interrupted.resolve();
  await platform.relay.idle();
  // The interrupted stream is closed, as Twilio's SDK closes it.
  expect(texts(from)).toEqual([{ type: 'text', token: 'Our kettles ', last: false }, { type: 'text', token: '', last: true }]);

  // 4. The model's stream is cut mid-reply: the caller hears the apology after what already went out, in the same reply.
  // The next turn's model sees only the words heard of the interrupted reply.
  const requests = model.requests.length;
  model.script({ text: 'I think the answer is', pieces: ['I think ', 'the answer ', 'is'], cutAfter: 1 });
  relay.say('What colour is it?');
  await relay.until(() => relay.replies().length === 4, 'the apology');
  const history = model.requests[requests]!.body.messages;
  expect(history.filter((m: any) => m.role === 'assistant').map((m: any) => m.content).at(-1)).toBe('Our kettles');

  model.script({ toolCalls: [{ name: 'end_call', arguments: { reason: 'done' } }] }, { text: 'Goodbye!' });
  relay.say('Thanks, bye.');
  await relay.closed;
  expect(relay.replies()).toEqual(['Refunds take five business days.', 'Let me check. We have 7 kettles.', 'Our kettles', `I think ${RELAY_APOLOGY}`, 'Goodbye!']);
  expect(relay.refused).toEqual([]);

  await platform.relay.idle();
  await platform.queue.waitForIdle();
  const ended = await until(async () => (await api('GET', `/api/v1/calls/${callId}`)).body.data, (c) => c.status === 'ended' && c.transcript?.length > 0, 'the call ended with its transcript');
  expect(ended.transcript.map((t: any) => [t.role, t.text, t.interrupted ?? false])).toEqual([
    ['agent', 'Thanks for calling Acme, Ava speaking.', false],
    ['user', 'How long do refunds take?', false],
    ['agent', 'Refunds take five business days.', false],
    ['user', 'Is the kettle in stock?', false],
    ['agent', 'Let me check. We have 7 kettles.', false],
    ['user', 'Tell me about the kettle.', false],
    ['agent', 'Our kettles', true],
    ['user', 'What colour is it?', false],
    ['agent', `I think ${RELAY_APOLOGY}`, false],
    ['user', 'Thanks, bye.', false],
    ['agent', 'Goodbye!', false],
  ]);
});

it('drops a turn started from a state another invocation has since changed: it says nothing and runs no tool, and the turn starts again from the state its claim read', async () => {
  const { callId, relay } = await callIn(await relayAgent());
  const platform = local().platform;
  model.script({ text: 'Refunds take five business days.' });
  relay.say('How long do refunds take?');
  await relay.until(() => relay.replies().length === 1, 'the first answer');
  await platform.relay.idle();

  // Another invocation (a container this process knows nothing of) cuts the last reply: the turn's item changes, the state's version moves.
  const { db, tableName } = await import('../../shared/db/client');
  const { UpdateCommand, ScanCommand } = await import('@aws-sdk/lib-dynamodb');
  const items = (await db().send(new ScanCommand({ TableName: tableName(), FilterExpression: 'entity = :e AND call_id = :c', ExpressionAttributeValues: { ':e': 'RELAY_CONNECTION', ':c': callId }, ConsistentRead: true }))).Items ?? [];
  expect(items).toHaveLength(1);
  const connection = items[0]!;
  const turnKey = keys.relayTurn(callId, connection.last_turn);
  const { getItem } = await import('../../shared/db/store');
  const turn = (await getItem<any>(turnKey))!;
  const messages = turn.messages.map((m: any) => (m.role === 'agent' && m.content === 'Refunds take five business days.' ? { ...m, content: 'Refunds take five' } : m));
  await db().send(new UpdateCommand({ TableName: tableName(), Key: turnKey, UpdateExpression: 'SET messages = :m', ExpressionAttributeValues: { ':m': messages } }));
  await db().send(new UpdateCommand({ TableName: tableName(), Key: { pk: connection.pk, sk: connection.sk }, UpdateExpression: 'ADD version :one', ExpressionAttributeValues: { ':one': 1 } }));

  const fresh = (body: any) => body.messages.some((m: any) => m.role === 'assistant' && m.content === 'Refunds take five');
  const step = (body: any) => (fresh(body) ? { text: 'From the current state.' } : { text: 'From a stale state.', toolCalls: [{ name: 'stock_level', arguments: { sku: 'kettle' } }] });
  model.script(step, step);
  const requests = model.requests.length;
  const stock = stockRequests.length;
  relay.say('And exchanges?');
  await relay.until(() => relay.replies().length === 2, 'the second answer');
  await platform.relay.idle();
  expect(relay.replies()[1]).toBe('From the current state.');
  // One request from the stale state (dropped: nothing said, no tool run) and one from the current state; which reaches the model first is the machine's business.
  expect(model.requests.slice(requests).map((r) => fresh(r.body)).sort()).toEqual([false, true]);
  expect(stockRequests.length).toBe(stock);
  expect(relay.received.filter((m) => m.type === 'text' && m.last)).toHaveLength(2);
  model.reset();
  relay.close();
  await relay.closed;
  await platform.relay.idle();
});

/** Issue 33: what real Twilio and API Gateway do, each with a test that failed against the relay before it. */
describe('relay calls on real Twilio and API Gateway', () => {
  const platform = () => local().platform;
  afterEach(() => {
    platform().relay.faults.failPost = undefined;
    platform().relay.faults.loseDisconnect = false;
    model.reset();
  });

  it('answers a bare connection 401, a forged signature 401 and a reused token 410, each with a body saying why', async () => {
    const bare = await RelayClient.connect(platform().relay.url, { callSid: 'CA1', customParameters: {} }).catch((err) => err);
    expect(bare).toMatchObject({ status: 401, body: expect.stringMatching(/token/) });
    const { call } = await callIn(await relayAgent());
    const url = call.twiml.match(/<ConversationRelay url="([^"]*)"/)![1]!.replace(/&amp;/g, '&');
    const unsigned = await RelayClient.connect(url, { callSid: call.sid, customParameters: {} }, { 'x-twilio-signature': 'forged' }).catch((err) => err);
    expect(unsigned).toMatchObject({ status: 401, body: expect.stringMatching(/X-Twilio-Signature/) });
    const { twilioSignature } = await import('../../shared/adapters/telephony/twilio-signature');
    const reused = await RelayClient.connect(url, { callSid: call.sid, customParameters: {} }, { 'x-twilio-signature': twilioSignature(TOKEN, url, {}) }).catch((err) => err);
    expect(reused).toMatchObject({ status: 410, body: expect.stringMatching(/used already/) });
    call.relay!.close();
    await call.relay!.closed;
  });

  it('sends one model request for the first prompt however soon after setup it comes; the caller\'s hang-up ends the inbound call (the <Connect action> with CallStatus completed, the status callback)', async () => {
    const { callId, relay } = await callIn(await relayAgent());
    const before = model.requests.length;
    model.script({ text: 'Hello there.' }, { text: 'A second request.' });
    relay.say('Hi.'); // right behind setup, which the stand-in sent on connecting
    await relay.until(() => relay.replies().length === 1, 'the answer');
    await platform().relay.idle();
    expect(relay.replies()).toEqual(['Hello there.']);
    expect(model.requests.length - before).toBe(1);
    relay.close();
    await relay.closed;
    await platform().relay.idle();
    // The action Twilio requests after the hang-up (and the status callback) ends the call: its end queues the analysis and call.ended.
    await platform().queue.waitForIdle();
    const ended = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Thanks for calling Acme, Ava speaking.', 'Hi.', 'Hello there.']);
    await until(async () => (await api('GET', '/api/v1/events?type=call.ended&limit=100')).body.data.filter((e: any) => e.data?.id === callId).length, (n) => n === 1, 'call.ended');
  });

  it('transfers through the <Connect action>: the session ends with HandoffData, the action dials, the call stays up and is `transferred`', async () => {
    const agentId = await relayAgent({ selected_tools: [{ type: 'transfer_call', phone_number: '+14155550142' }] });
    const { call, callId, relay } = await callIn(agentId);
    model.script({ toolCalls: [{ name: 'transfer_call', arguments: {} }] }, { text: 'Putting you through.' });
    relay.say('A human, please.');
    await relay.closed;
    await until(async () => call.actions?.length ?? 0, (n) => n > 0, 'the <Connect action> request');
    await call.after;
    expect(call.failures ?? []).toEqual([]);
    expect(call.actions![0]!.params).toMatchObject({ HandoffData: JSON.stringify({ reasonCode: 'transfer', to: '+14155550142' }), SessionStatus: 'ended' });
    expect(call.actions![0]!.twiml).toMatch(/<Dial timeout="\d+">\+14155550142<\/Dial>/);
    expect(call.dialled).toBe('+14155550142');
    expect(call.status).toBe('in-progress'); // a <Connect> without action would have hung up here
    await platform().queue.waitForIdle();
    const ended = await endedCall(callId);
    expect(ended.disconnection_reason).toBe('transferred');
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Thanks for calling Acme, Ava speaking.', 'A human, please.', 'Putting you through.']);
    await twilio.hangUp(call.sid);
  });

  it('runs the agent version the call recorded: the published prompt and pipeline, not the draft', async () => {
    const agentId = await relayAgent({ prompt: 'You are the published Ava.' });
    expect((await api('POST', `/api/v1/agents/${agentId}/versions`, { body: {} })).status).toBe(200);
    expect((await api('PATCH', `/api/v1/agents/${agentId}`, { body: { prompt: 'You are the draft Ava.' } })).status).toBe(200);
    const { relay } = await callIn(agentId);
    const before = model.requests.length;
    model.script({ text: 'Published speaking.' });
    relay.say('Who is this?');
    await relay.until(() => relay.replies().length === 1, 'the answer');
    const system = model.requests[before]!.body.messages.find((m: any) => m.role === 'system').content;
    expect(system).toContain('You are the published Ava.');
    expect(system).not.toContain('draft');
    relay.close();
    await relay.closed;
    await platform().relay.idle();
  });

  it('speaks one reply at a time: a newer prompt supersedes the running one, and an interrupt aborts the model request (the model sees its connection closed) and closes the token stream; neither answer waits for the cancelled request', async () => {
    const { callId, relay } = await callIn(await relayAgent());
    const never = deferred(); // the superseded and the interrupted requests would run until the test ends
    const texts = (from: number) => relay.received.slice(from).filter((m) => m.type === 'text');
    let from = relay.received.length;
    // The cancelled request's connection is closed soon after the reply stops (its HTTP request aborted, not left to run).
    const abortedSoon = async (request: { abortedAt?: number }, stoppedAt: number) => {
      await until(async () => request.abortedAt, (at) => at !== undefined, 'the cancelled model request closed');
      expect(request.abortedAt! - stoppedAt).toBeLessThan(1000);
    };
    const superseded = model.requests.length;
    model.script({ text: 'Let me check. We have seven kettles.', pieces: ['Let me check.', ' We have seven kettles.'], holdUntil: never.promise }, { text: 'Yes, I am still here.', pieces: ['Yes, I am still here.'] });
    relay.say('Is the kettle in stock?');
    await relay.until(() => texts(from).length > 0, 'the first words');
    let stoppedAt = Date.now();
    relay.say('Are you there?');
    await relay.until(() => relay.replies().length === 2, 'the newer answer');
    expect(texts(from).map((m) => [m.token, m.last])).toEqual([['Let me check.', false], ['', true], ['Yes, I am still here.', false], ['', true]]);
    await abortedSoon(model.requests[superseded]!, stoppedAt);
    expect(model.requests[superseded + 1]!.abortedAt).toBeUndefined();

    from = relay.received.length;
    const interrupted = model.requests.length;
    model.script({ text: 'Our kettles come in four colours.', pieces: ['Our kettles', ' come in four colours.'], holdUntil: never.promise }, { text: 'Red and blue.', pieces: ['Red and blue.'] });
    relay.say('Which colours?');
    await relay.until(() => texts(from).length > 0, 'the colours answer');
    stoppedAt = Date.now();
    relay.interrupt('Our kettles');
    await relay.until(() => texts(from).some((m) => m.last), 'the interrupted stream closed');
    await abortedSoon(model.requests[interrupted]!, stoppedAt);
    relay.say('Just the names.');
    await relay.until(() => relay.replies().length === 4, 'the answer after the interruption');
    expect(texts(from).map((m) => [m.token, m.last])).toEqual([['Our kettles', false], ['', true], ['Red and blue.', false], ['', true]]);
    relay.close();
    await relay.closed;
    await platform().relay.idle();
    const call = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(call.transcript.map((t: any) => [t.role, t.text, t.interrupted ?? false])).toEqual([
      ['agent', 'Thanks for calling Acme, Ava speaking.', false],
      ['user', 'Is the kettle in stock?', false],
      ['agent', 'Let me check.', true],
      ['user', 'Are you there?', false],
      ['agent', 'Yes, I am still here.', false],
      ['user', 'Which colours?', false],
      ['agent', 'Our kettles', true],
      ['user', 'Just the names.', false],
      ['agent', 'Red and blue.', false],
    ]);
    never.resolve();
  });

  it('stops a reply interrupted in another container: the speaking turn reads the interruption from the table (the deployed path)', async () => {
    const { callId, relay } = await callIn(await relayAgent());
    const never = deferred();
    const texts = (from: number) => relay.received.slice(from).filter((m) => m.type === 'text');
    const from = relay.received.length;
    model.script({ text: 'Our kettles come in four colours.', pieces: ['Our kettles', ' come in four colours.'], holdUntil: never.promise });
    relay.say('Which colours?');
    await relay.until(() => texts(from).length > 0, 'the first words');
    // Another container handled the `interrupt`: all this process can learn of it is the connection's item.
    const { db, tableName } = await import('../../shared/db/client');
    const { ScanCommand, UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const [connection] = (await db().send(new ScanCommand({ TableName: tableName(), FilterExpression: 'entity = :e AND call_id = :c', ExpressionAttributeValues: { ':e': 'RELAY_CONNECTION', ':c': callId }, ConsistentRead: true }))).Items ?? [];
    await db().send(new UpdateCommand({ TableName: tableName(), Key: { pk: connection!.pk, sk: connection!.sk }, UpdateExpression: 'SET pending_interrupt = :p ADD version :one', ExpressionAttributeValues: { ':p': { turn: connection!.turn, heard: 'Our kettles' }, ':one': 1 } }));
    await relay.until(() => texts(from).some((m) => m.last), 'the interrupted stream closed');
    expect(texts(from).map((m) => [m.token, m.last])).toEqual([['Our kettles', false], ['', true]]);
    await platform().relay.idle();
    relay.close();
    await relay.closed;
    await platform().relay.idle();
    const call = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(call.transcript.at(-1)).toMatchObject({ role: 'agent', text: 'Our kettles', interrupted: true });
    never.resolve();
  });

  it('survives failed sends: a throttled send is retried, a failed one stops only its reply, a gone connection ends the session; no rejection goes unhandled and every turn is kept', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const { callId, relay } = await callIn(await relayAgent());
      let throttled = 2;
      platform().relay.faults.failPost = (_id, m) => (m.type === 'text' && m.token === 'Five ' && throttled-- > 0 ? 429 : undefined);
      model.script({ text: 'Five business days.', pieces: ['Five ', 'business days.'] });
      relay.say('Refunds?');
      await relay.until(() => relay.replies().length === 1, 'the throttled answer');
      expect(relay.replies()[0]).toBe('Five business days.');

      platform().relay.faults.failPost = (_id, m) => (m.type === 'text' && m.token === 'broken' ? 500 : undefined);
      model.script({ text: 'A broken reply.', pieces: ['A ', 'broken', ' reply.'] });
      relay.say('Exchanges?');
      await relay.until(() => relay.replies().length === 2, 'the reply cut by a failed send');
      await platform().relay.idle();
      expect(relay.replies()[1]).toBe('A');

      platform().relay.faults.failPost = (_id, m) => (m.type === 'text' ? 410 : undefined);
      model.script({ text: 'Nobody hears this.' });
      relay.say('Hello?');
      await platform().relay.untilHandled(platform().relay.handled + 1);
      await platform().relay.idle();
      platform().relay.faults.failPost = undefined;
      relay.close();
      await relay.closed;
      await platform().relay.idle();
      const call = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
      expect(call.transcript.filter((t: any) => t.role === 'user').map((t: any) => t.text)).toEqual(['Refunds?', 'Exchanges?', 'Hello?']);
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('keeps the whole transcript when $disconnect never comes: the recovery sweep writes it from the turns, and the call ends exactly once', async () => {
    const { call, callId, relay } = await callIn(await relayAgent());
    const { runCallRecovery } = await import('../../shared/domain/calls/recovery');
    const { RELAY_SESSION_DUE_MS } = await import('../../shared/domain/relay/state');
    const connectedAt = clockMs();
    model.script({ text: 'Five business days.' }, { toolCalls: [{ name: 'stock_level', arguments: { sku: 'kettle' } }] }, { text: 'Seven kettles.' });
    relay.say('Refunds?');
    await relay.until(() => relay.replies().length === 1, 'the first answer');
    // The caller speaks again 15 minutes into the call (the clock jumps; API Gateway's idle limit set aside for it).
    const limits = { ...platform().relay.faults.limits };
    platform().relay.faults.limits.idleMs = 24 * 3600_000;
    const later = 15 * 60_000;
    installTimeSource({ now: () => Date.now() + later });
    try {
      relay.say('Is the kettle in stock?');
      await relay.until(() => relay.replies().length === 2, 'the second answer');
      await platform().relay.idle();
    } finally {
      installTimeSource(undefined);
      platform().relay.faults.limits = limits;
    }
    // The connection's entry falls due 20 minutes after it opened, but the session heard a prompt 5 minutes before: it may live, the entry moves on.
    await runCallRecovery({ now: new Date(connectedAt + RELAY_SESSION_DUE_MS + 1000) });
    expect((await api('GET', `/api/v1/calls/${callId}`)).body.data.transcript).toEqual([]);
    platform().relay.faults.loseDisconnect = true;
    relay.onSessionEnd = undefined; // Twilio's request for the <Connect action> never reaches the platform either
    await twilio.hangUp(call.sid);
    await relay.closed;
    await platform().queue.waitForIdle();
    expect(platform().relay.faults.lost.length).toBeGreaterThan(0);
    expect(call.actions ?? []).toEqual([]);
    // The entry was moved on: due 20 minutes after the last prompt.
    const { getItem } = await import('../../shared/db/store');
    const entry = await getItem<{ call_id: string; due_at: string }>(keys.relayConnectionDue(platform().relay.faults.lost.at(-1)!));
    expect(entry?.call_id).toBe(callId);
    expect(Date.parse(entry!.due_at)).toBeGreaterThan(connectedAt + later + RELAY_SESSION_DUE_MS - 1000);
    // The carrier's final status ended the call; the transcript reaches a call when its session ends, and this one's end never came.
    const carrierEnded = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(carrierEnded).toMatchObject({ status: 'ended', transcript: [] });

    // The recovery sweep, run as its schedule runs it, once the session has been quiet for RELAY_SESSION_DUE_MS (its last prompt, 15 minutes in, + 20).
    const at = clockMs() + later + RELAY_SESSION_DUE_MS + 1000;
    const early = await runCallRecovery({ now: new Date(at - 60_000) });
    expect((await api('GET', `/api/v1/calls/${callId}`)).body.data.transcript).toEqual([]);
    expect(early.failed).toBe(0);
    const summary = await runCallRecovery({ now: new Date(at) });
    expect(summary.relaySessions).toBeGreaterThanOrEqual(1);
    await platform().queue.waitForIdle();
    const ended = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Thanks for calling Acme, Ava speaking.', 'Refunds?', 'Five business days.', 'Is the kettle in stock?', 'Seven kettles.']);
    expect(ended.tool_calls.map((t: any) => [t.name, t.arguments, t.result])).toEqual([['stock_level', { sku: 'kettle' }, { sku: 'kettle', units: 7 }]]);
    expect(ended.error_message ?? null).toBeNull();
    // Ended once: one call.ended; a later sweep changes nothing.
    await runCallRecovery({ now: new Date(at + 120_000) });
    await platform().queue.waitForIdle();
    expect((await api('GET', `/api/v1/calls/${callId}`)).body.data).toMatchObject({ status: 'ended', transcript: ended.transcript, ended_at: ended.ended_at });
    expect((await api('GET', '/api/v1/events?type=call.ended&limit=100')).body.data.filter((e: any) => e.data?.id === callId)).toHaveLength(1);
  });

  it('ends through the recovery sweep a relay call nothing else ends (no status callback, $disconnect and the <Connect action> lost), with its whole transcript from the turns', async () => {
    const agentId = await relayAgent({ max_call_duration_ms: 60_000 });
    // A number whose calls report no status (Twilio calls back for an incoming call only when the number has a StatusCallback).
    const phone = uniquePhone();
    expect((await api('POST', '/api/v1/phone-numbers/import', { body: { phone, type: 'pstn', inbound_agent_id: agentId } })).status).toBe(200);
    twilio.adopt(phone, { voiceUrl: `${platform().url}/api/v1/telephony/twilio/inbound` });
    const call = await twilio.incomingCall(uniquePhone(), phone);
    const callId = call.twiml.match(/<Parameter name="call_id" value="([^"]*)"/)![1]!;
    const relay = call.relay!;
    model.script({ text: 'Five business days.' });
    relay.say('Refunds?');
    await relay.until(() => relay.replies().length === 1, 'the answer');
    await platform().relay.idle();
    platform().relay.faults.loseDisconnect = true;
    relay.onSessionEnd = undefined; // Twilio's request for the <Connect action> never reaches the platform either
    await twilio.hangUp(call.sid);
    await relay.closed;
    await platform().queue.waitForIdle();
    expect(call.actions ?? []).toEqual([]);
    const live = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(live.status).not.toBe('ended');

    // The sweep once the call is due (its answer + its maximum duration + the margin), before the session's own entry is.
    const { runCallRecovery } = await import('../../shared/domain/calls/recovery');
    const { RECOVERY_MARGIN_MS } = await import('../../shared/domain/calls/service');
    // (Its entry moved earlier at the answer, which the sweep's marker does not follow: the sweep is asked to read the last hour whatever the marker says.)
    const summary = await runCallRecovery({ now: new Date(Date.parse(live.answered_at) + 60_000 + RECOVERY_MARGIN_MS + 1000), lookbackHours: 1 });
    expect(summary.ended).toBeGreaterThanOrEqual(1);
    await platform().queue.waitForIdle();
    const ended = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'failed' });
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Thanks for calling Acme, Ava speaking.', 'Refunds?', 'Five business days.']);
    expect(ended.error_message).toMatch(/recovery sweep/);
    expect(ended.error_message).not.toMatch(/voice/i);
    expect((await api('GET', '/api/v1/events?type=call.ended&limit=100')).body.data.filter((e: any) => e.data?.id === callId)).toHaveLength(1);
  });

  it('files every turn of a long call with a large prompt and large tool results (no item near 400 KB)', async () => {
    const big = 'Policy. '.repeat(5_400); // ~42 KB of prompt
    const { callId, relay } = await callIn(await relayAgent({ prompt: `You are {{agent_name}} of Acme. ${big}` }));
    const turns = 14;
    const steps = Array.from({ length: turns }, (_, i) => [{ toolCalls: [{ name: 'stock_level', arguments: { sku: `big-${i}` } }] }, { text: `Answer ${i}.` }]).flat();
    model.script(...steps);
    for (let i = 0; i < turns; i++) {
      relay.say(`Question ${i}?`);
      await relay.until(() => relay.replies().length === i + 1, `answer ${i}`);
    }
    await platform().relay.idle();
    relay.close();
    await relay.closed;
    await platform().relay.idle();
    const call = (await api('GET', `/api/v1/calls/${callId}`)).body.data;
    expect(call.transcript).toHaveLength(1 + 2 * turns);
    expect(call.transcript.at(-1)).toMatchObject({ role: 'agent', text: `Answer ${turns - 1}.` });
    expect(call.tool_calls).toHaveLength(turns);
    // The model still got its history: the last request carried the turn before's answer.
    expect(model.requests.at(-1)!.body.messages.some((m: any) => m.role === 'assistant' && m.content === `Answer ${turns - 2}.`)).toBe(true);
  });

  it('goes on in a new session before API Gateway\'s 2-hour limit when the agent allows the call longer: the turn is answered, the session ends, the action reconnects, the history carries over', async () => {
    const { call, callId, relay } = await callIn(await relayAgent({ max_call_duration_ms: 4 * 3600_000 }));
    model.script({ text: 'Refunds take five business days.' });
    relay.say('How long do refunds take?');
    await relay.until(() => relay.replies().length === 1, 'the first answer');
    await platform().relay.idle();
    // The caller spoke a minute ago, not 116: the clock jumps, so API Gateway's idle timeout is set aside for this call.
    const limits = { ...platform().relay.faults.limits };
    platform().relay.faults.limits.idleMs = 24 * 3600_000;
    installTimeSource({ now: () => Date.now() + 116 * 60_000 });
    try {
      model.script({ text: 'About a week for exchanges.' });
      relay.say('And exchanges?');
      await relay.closed;
      expect(relay.replies().at(-1)).toBe('About a week for exchanges.');
      expect(relay.received.at(-1)).toEqual({ type: 'end', handoffData: JSON.stringify({ reasonCode: 'reconnect' }) });
      await until(async () => call.relays?.length ?? 0, (n) => n === 2, 'the reconnected session');
      expect(call.actions![0]!.twiml).toMatch(/<Connect action="[^"]*attempt=1"><ConversationRelay /);
      expect(call.actions![0]!.twiml).not.toMatch(/welcomeGreeting/);
      const next = call.relays![1]!;
      const before = model.requests.length;
      model.script({ text: 'Yes, still five days.' });
      next.say('Still five days?');
      await next.until(() => next.replies().length === 1, 'the answer in the new session');
      expect(model.requests[before]!.body.messages.some((m: any) => m.role === 'assistant' && m.content === 'Refunds take five business days.')).toBe(true);
      expect(call.status).toBe('in-progress');
      await platform().relay.idle();
      await twilio.hangUp(call.sid);
      await platform().relay.idle();
      await platform().queue.waitForIdle();
      const ended = await endedCall(callId);
      expect(ended.transcript.map((t: any) => t.text)).toEqual(['Thanks for calling Acme, Ava speaking.', 'How long do refunds take?', 'Refunds take five business days.', 'And exchanges?', 'About a week for exchanges.', 'Still five days?', 'Yes, still five days.']);
    } finally {
      installTimeSource(undefined);
      platform().relay.faults.limits = limits;
    }
  });

  it('closes a connection at API Gateway\'s limits (the local server enforces 2 hours and 10 idle minutes); the call resumes in a new session (relay-socket-drop.test.ts)', async () => {
    const { call, relay } = await callIn(await relayAgent());
    installTimeSource({ now: () => Date.now() + 10 * 60_000 + 1000 });
    try {
      platform().relay.enforceLimits();
      expect(await relay.closed).toBe(1001);
      await until(async () => call.relays?.length ?? 0, (n) => n === 2, 'the resumed session');
      await twilio.hangUp(call.sid);
    } finally {
      installTimeSource(undefined);
    }
    await platform().relay.idle();
  });

  it('ends a call at its time limit with a spoken goodbye; the action hangs up', async () => {
    const { call, callId, relay } = await callIn(await relayAgent({ max_call_duration_ms: 60_000 }));
    model.script({ text: 'Hello.' });
    relay.say('Hi.');
    await relay.until(() => relay.replies().length === 1, 'the first answer');
    await platform().relay.idle();
    installTimeSource({ now: () => Date.now() + 61_000 });
    try {
      relay.say('Still there?');
      await relay.closed;
      expect(relay.replies().at(-1)).toBe(RELAY_TIME_UP);
      expect(relay.received.at(-1)).toEqual({ type: 'end', handoffData: JSON.stringify({ reasonCode: 'max-duration' }) });
      await until(async () => call.actions?.length ?? 0, (n) => n > 0, 'the <Connect action> request');
      await call.after;
      expect(call.actions![0]!.twiml).toMatch(/<Hangup\/>/);
      expect(call.status).toBe('completed');
      await platform().queue.waitForIdle();
      const ended = await endedCall(callId);
      expect(ended.transcript.at(-1)).toMatchObject({ role: 'agent', text: RELAY_TIME_UP });
    } finally {
      installTimeSource(undefined);
    }
  });
});

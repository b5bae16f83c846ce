import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { v7 as uuidv7 } from 'uuid';
import WebSocket from 'ws';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetTelephony } from '../../shared/adapters/telephony';
import { twilioSignature } from '../../shared/adapters/telephony/twilio-signature';
import { resetConfig } from '../../shared/config';
import { keys } from '../../shared/db/keys';
import { getItem } from '../../shared/db/store';
import { createAgent } from '../../shared/domain/agents/service';
import { listCharges } from '../../shared/domain/billing/service';
import { handleCallEventMessage } from '../../shared/domain/calls/carrier-events';
import { placeQueuedCall } from '../../shared/domain/calls/lifecycle';
import { CreateCallBody } from '../../shared/domain/calls/schemas';
import { createCall, type CallItem } from '../../shared/domain/calls/service';
import { createContact } from '../../shared/domain/contacts/service';
import { createKnowledgeBase, ingest } from '../../shared/domain/rag/service';
import { IngestBody } from '../../shared/domain/rag/schemas';
import { ingestBatchHandler } from '../../shared/domain/rag/ingest-worker';
import { createTool } from '../../shared/domain/tools/service';
import { CreateToolBody } from '../../shared/domain/tools/schemas';
import { Webhook } from 'standardwebhooks';
import { logger } from '../../shared/logger';
import { handler as twilioTwiml } from '../../functions/telephony/twilio-twiml';
import { startVoiceServer, type VoiceServer } from '../../voice/server';
import { apiEvent, lambdaContext } from '../support/events';
import { buyFromPool, ownNumber } from '../support/numbers';
import { startRealtimeStandIn, type ModelConnection, type RealtimeStandIn } from '../support/realtime-stand-in';
import { readBody } from '../support/stand-in';
import { twilioEnvironment } from '../support/twilio-env';
import { mulawRecording, TwilioMediaClient } from '../support/twilio-media-client';

logger.setLogLevel('SILENT');

/**
 * The voice runtime end to end, in one process: calls placed through the Twilio adapter (against
 * a Twilio REST stand-in), answered with the TwiML the platform gives Twilio, their media streamed
 * by a Twilio Media Streams stand-in that plays a μ-law recording, bridged by the runtime to a
 * stand-in Realtime model that follows a script per agent (its `s2s_model` names the script), and
 * ended by the carrier's status callback through the call-events job, as a real call is.
 */
const SID = 'AC00000000000000000000000000000002';
const TOKEN = 'voice-test-token';
const PUBLIC = 'https://api.example.test';

const queued: { queue: string; body: any }[] = [];
let twilio: Server;
let voice: VoiceServer;
let model: RealtimeStandIn;
/** POSTs to Calls/{Sid}.json (hang-ups, transfers), by call sid. */
const updates: { sid: string; form: URLSearchParams }[] = [];
/** The media stream of each carrier call: a hang-up or new instructions end it, as Twilio does. */
const streams = new Map<string, TwilioMediaClient>();
const scripts = new Map<string, (m: ModelConnection) => Promise<void>>();
let sidSeq = 0;
const environment = twilioEnvironment();

beforeAll(async () => {
  installLocalQueue({ send: async (queue, body) => void queued.push({ queue, body }) });
  twilio = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://stand-in');
    const form = new URLSearchParams(await readBody(req));
    if (req.method === 'POST' && url.pathname === `/2010-04-01/Accounts/${SID}/Calls.json`) {
      res.writeHead(201, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ sid: `CA${String(++sidSeq).padStart(32, '0')}`, status: 'queued' }));
    }
    const live = url.pathname.match(new RegExp(`^/2010-04-01/Accounts/${SID}/Calls/(CA\\w+)\\.json$`));
    if (req.method === 'POST' && live) {
      updates.push({ sid: live[1]!, form });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sid: live[1], status: 'in-progress' }));
      // The call leaves <Connect><Stream>: Twilio stops the stream.
      setTimeout(() => streams.get(live[1]!)?.stop(), 5);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => twilio.listen(0, '127.0.0.1', resolve));
  model = await startRealtimeStandIn(async (m) => {
    const script = scripts.get(m.model ?? '');
    if (!script) throw new Error(`no script for model ${m.model}`);
    await script(m);
  });
  const env: Record<string, string> = {
    TELEPHONY_PROVIDER: 'twilio',
    TWILIO_API_BASE: `http://127.0.0.1:${(twilio.address() as AddressInfo).port}`,
    TWILIO_ACCOUNT_SID: SID,
    TWILIO_AUTH_TOKEN: TOKEN,
    PUBLIC_BASE_URL: PUBLIC,
    REALTIME_BASE_URL: model.url,
    REALTIME_API_KEY: 'sk-stand-in',
  };
  environment.set(env);
  voice = await startVoiceServer({ port: 0, host: '127.0.0.1' });
  environment.set({ VOICE_RUNTIME_URL: voice.url });
});

afterAll(async () => {
  await voice?.close();
  await model?.close();
  await new Promise((r) => twilio.close(r));
  installLocalQueue(undefined);
  environment.restore();
});

afterEach(() => expect(model.errors).toEqual([]));

/**
 * An organization with a number of its own and an agent. The number is imported (no other test file
 * can take it) unless the test needs one bought (its minutes charged): then from Vancouver (604) of the
 * simulated pool, which no other integration file buys from.
 */
/** Runs `work` with the simulated carrier configured (its pool sells numbers), then Twilio again. */
async function withSimulatedCarrier<T>(work: () => Promise<T>): Promise<T> {
  process.env.TELEPHONY_PROVIDER = 'simulated';
  resetTelephony();
  try {
    return await work();
  } finally {
    process.env.TELEPHONY_PROVIDER = 'twilio';
    resetTelephony();
  }
}

async function organization(agent: Record<string, unknown>, o: { bought?: boolean } = {}) {
  const org = uuidv7();
  const number = o.bought ? await withSimulatedCarrier(async () => (await buyFromPool(org, '604', { country: 'CA' })).number) : await ownNumber(org);
  const created = await createAgent(org, { name: 'Voice', agent_name: 'Ava', reminder_trigger_ms: 0, ...agent } as never);
  return { org, agentId: created.id, from: number.phone_number };
}

/** A Twilio callback as Twilio sends it, signed over the public URL and its parameters. */
function callback(path: string, org: string, callId: string, params: Record<string, string>) {
  const query = new URLSearchParams({ organization_id: org, call_id: callId });
  return apiEvent({
    method: 'POST', path, query: Object.fromEntries(query),
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}${path}?${query}`, params) },
    body: new URLSearchParams(params).toString(),
  });
}

const unxml = (s: string) => s.replace(/&quot;/g, '"').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');

/** The stream URL and `<Parameter>`s of a `<Connect><Stream>` TwiML. */
function streamOf(twiml: string): { url: string; parameters: Record<string, string> } {
  const url = unxml(twiml.match(/<Stream url="([^"]*)"/)![1]!);
  const parameters = Object.fromEntries([...twiml.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)].map((m) => [unxml(m[1]!), unxml(m[2]!)]));
  return { url, parameters };
}

const status = (org: string, callId: string, sid: string, s: string, extra: Record<string, unknown> = {}) =>
  handleCallEventMessage({ kind: 'status', organization_id: org, call_id: callId, provider: 'twilio', event: { providerCallId: sid, status: s as never, at: new Date().toISOString(), ...extra } });

/** Places an outbound call, answers it, and connects its media stream with the TwiML's parameters. */
type CallOptions = { answeredBy?: string; contact?: Record<string, unknown>; autoEcho?: boolean };

async function answeredCall(agent: Record<string, unknown>, o: CallOptions = {}) {
  const { org, agentId, from } = await organization(agent);
  return connectCall(org, agentId, from, o);
}

/** As answeredCall, in an organization made before (its knowledge base and tools ready), with a new agent. */
async function answeredCallIn(made: { org: string; from: string }, agent: Record<string, unknown>, o: CallOptions = {}) {
  const created = await createAgent(made.org, { name: 'Voice', agent_name: 'Ava', reminder_trigger_ms: 0, ...agent } as never);
  return connectCall(made.org, created.id, made.from, o);
}

async function connectCall(org: string, agentId: string, from: string, o: CallOptions) {
  const contact = o.contact ? await createContact(org, o.contact as never) : undefined;
  const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550142', ...(contact ? { contact_id: contact.id } : {}) }));
  await placeQueuedCall(org, call.id);
  const sid = (await getItem<CallItem>(keys.call(org, call.id)))!.provider_call_id!;
  await status(org, call.id, sid, 'in-progress', o.answeredBy ? { answeredBy: o.answeredBy } : {});
  const res = await twilioTwiml(callback('/api/v1/telephony/twilio/twiml', org, call.id, { CallSid: sid, ...(o.answeredBy ? { AnsweredBy: o.answeredBy } : {}) }), lambdaContext);
  const stream = streamOf(res.body as string);
  expect(stream.url).toBe(voice.url);
  const client = await TwilioMediaClient.connect(stream.url, { callSid: sid, customParameters: stream.parameters, autoEcho: o.autoEcho });
  streams.set(sid, client);
  return { org, call, sid, client, parameters: stream.parameters };
}

/** Waits until the runtime has finished the call's session (its conversation written). */
async function sessionOver(callId: string) {
  const deadline = Date.now() + 10_000;
  while (voice.sessions.has(callId)) {
    if (Date.now() > deadline) throw new Error(`the session of ${callId} never ended`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The carrier reports the end, once the stream has stopped (Twilio's stop reaches the runtime before its status callback reaches the platform). */
async function carrierEnds(org: string, callId: string, sid: string, durationSec = 12, answeredBy?: string) {
  await sessionOver(callId);
  await status(org, callId, sid, 'completed', { durationSec, ...(answeredBy ? { answeredBy } : {}) });
  return (await getItem<CallItem & Record<string, any>>(keys.call(org, callId)))!;
}

const session = (m: ModelConnection) => m.next('session.update');
const tone = (seconds: number, seed: number) => mulawRecording(seconds, seed);

describe('an outbound call through the voice runtime', () => {
  it('speaks the begin message, relays audio byte for byte both ways, runs tools, ends after the goodbye has played, and the call carries it all', async () => {
    const greeting = tone(0.6, 11);
    const answer = tone(0.9, 12);
    const caller = mulawRecording(1.2, 7);
    let sessionConfig: any;
    let greetingCreate: any;
    let toolOutputs: any[] = [];
    scripts.set('script-outbound', async (m) => {
      sessionConfig = (await session(m)).session;
      greetingCreate = await m.next('response.create');
      m.speak({ responseId: 'resp_1', itemId: 'item_a1', audio: greeting, transcript: 'Hello Ann, this is Ava from Acme.' });
      // The caller speaks: every byte of the recording reaches the model.
      await m.until(() => m.inputAudio().length >= caller.length, 'the caller audio');
      m.userSays('item_u1', 'Do you have time on the first of December?');
      m.speak({ responseId: 'resp_2', itemId: 'item_a2', calls: [{ callId: 'call_1', name: 'check_availability', args: { start_date: '2030-12-02' } }] });
      toolOutputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output'));
      await m.next('response.create');
      m.speak({ responseId: 'resp_3', itemId: 'item_a3', audio: answer, transcript: 'We have ten o clock free. Goodbye!', calls: [{ callId: 'call_2', name: 'end_call', args: { reason: 'done' } }] });
      toolOutputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'call_2'));
    });
    const { org, call, sid, client } = await answeredCall(
      {
        s2s_model: 'script-outbound', voice_id: 'marin', temperature: 0.8,
        prompt: 'You are {{agent_name}} calling {{contact.first_name}} for {{contact.company}}.',
        begin_message: 'Hello {{contact.first_name}}, this is {{agent_name}} from {{contact.company}}.',
        selected_tools: [{ type: 'check_availability' }, { type: 'end_call' }],
      },
      { contact: { first_name: 'Ann', company: 'Acme', phone: '+14155550142' } },
    );
    // The agent's first words reach the caller before the caller speaks; hold the marks of the goodbye.
    await client.until(() => client.media.length > 0, 'the greeting');
    await client.play(caller);
    await client.until(() => updates.some((u) => u.sid === sid), 'the hang-up', 15_000);
    await client.closed;
    const ended = await carrierEnds(org, call.id, sid, 14);

    // The model's session: the filled prompt, μ-law both ways without transcoding, server VAD, transcription, the tools.
    expect(model.connections.find((c) => c.model === 'script-outbound')!.request.headers.authorization).toBe('Bearer sk-stand-in');
    expect(sessionConfig).toMatchObject({
      type: 'realtime',
      instructions: 'You are Ava calling Ann for Acme.',
      audio: { input: { format: { type: 'audio/pcmu' }, turn_detection: { type: 'server_vad' }, transcription: { model: expect.any(String) } }, output: { format: { type: 'audio/pcmu' }, voice: 'marin' } },
    });
    expect(sessionConfig.tools.map((t: any) => t.name)).toEqual(['check_availability', 'end_call']);
    expect(greetingCreate.response.instructions).toContain('Hello Ann, this is Ava from Acme.');
    // Byte for byte: the caller's recording to the model, the model's audio to the caller.
    const m = model.connections.find((c) => c.model === 'script-outbound')!;
    expect(m.inputAudio().equals(caller)).toBe(true);
    expect(Buffer.concat(client.media).equals(Buffer.concat([greeting, answer]))).toBe(true);
    // A mark follows each chunk of agent audio.
    expect(client.marks.length).toBe(Math.ceil(greeting.length / 800) + Math.ceil(answer.length / 800));
    // The tool result went back, and end_call hung up through the carrier only after the goodbye played.
    expect(JSON.parse(toolOutputs[0].item.output)).not.toHaveProperty('error');
    expect(updates.find((u) => u.sid === sid)!.form.get('Status')).toBe('completed');
    // The call.
    expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'completed', duration_sec: 14 });
    expect(ended.error_message ?? null).toBeNull();
    expect(ended.transcript.map((t: any) => [t.role, t.text])).toEqual([
      ['agent', 'Hello Ann, this is Ava from Acme.'],
      ['user', 'Do you have time on the first of December?'],
      ['agent', 'We have ten o clock free. Goodbye!'],
    ]);
    expect(ended.transcript.every((t: any, i: number, all: any[]) => typeof t.time_sec === 'number' && (i === 0 || t.time_sec >= all[i - 1].time_sec))).toBe(true);
    expect(ended.tool_calls.map((t: any) => [t.name, t.arguments])).toEqual([
      ['check_availability', { start_date: '2030-12-02' }],
      ['end_call', { reason: 'done' }],
    ]);
    expect(ended.tool_calls[1].result).toEqual({ ended: true });
    expect(queued.filter((q) => q.queue === 'call-analysis' && q.body.call_id === call.id)).toHaveLength(1);
  });
});

describe('interruptions', () => {
  it('clears the carrier, truncates the item at what was heard, drops the rest, and never runs the interrupted end_call', async () => {
    const long = tone(2, 21);
    let truncate: any;
    let notRun: any;
    scripts.set('script-interrupt', async (m) => {
      await session(m);
      await m.next('response.create');
      // A long answer ending with end_call: the caller cuts in after 300 ms were played.
      m.speak({ responseId: 'resp_1', itemId: 'item_long', audio: long, transcript: 'Let me tell you all about our plans. Goodbye.', calls: [{ callId: 'call_end', name: 'end_call', args: {} }] });
      await m.next('conversation.item.create', (e) => e.item?.call_id === 'call_end');
      await m.until(() => m.received.some((e) => e.type === 'input_audio_buffer.append'), 'audio');
      streams.get(sidOf())!.echoMarks(3);
      await new Promise((r) => setTimeout(r, 100));
      m.userSays('item_u1', 'Wait, one question.');
      truncate = await m.next('conversation.item.truncate');
      notRun = await m.next('conversation.item.create', (e) => e.item?.type === 'message');
      // Audio the model still sends for the cut generation is not played.
      m.send({ type: 'response.output_audio.delta', response_id: 'resp_1', item_id: 'item_long', delta: tone(0.2, 3).toString('base64') });
      // Server VAD answers the caller by itself (create_response).
      m.speak({ responseId: 'resp_2', itemId: 'item_a2', audio: tone(0.3, 22), transcript: 'Sure, go ahead.' });
    });
    let sid = '';
    const sidOf = () => sid;
    const answered = await answeredCall({ s2s_model: 'script-interrupt', begin_message: 'Hi', selected_tools: [{ type: 'end_call' }] }, { autoEcho: false });
    sid = answered.sid;
    const { org, call, client } = answered;
    await client.play(tone(0.2, 5));
    await client.until(() => client.clears === 1, 'a clear');
    const before = client.media.length;
    await client.until(() => client.marks.length > Math.ceil(long.length / 800), 'the next answer');
    client.echoMarks();
    await new Promise((r) => setTimeout(r, 300));
    // Still live: the interrupted end_call never hung up.
    expect(updates.some((u) => u.sid === sid)).toBe(false);
    expect(client.open).toBe(true);
    expect(truncate).toMatchObject({ item_id: 'item_long', content_index: 0, audio_end_ms: 300 });
    expect(notRun.item.content[0].text).toMatch(/goes on/);
    // The late delta of the cut generation never reached the caller: only the next answer did.
    expect(client.media.length - before).toBe(Math.ceil(tone(0.3, 22).length / 800));
    client.stop();
    await client.closed;
    const ended = await carrierEnds(org, call.id, sid);
    expect(ended.tool_calls).toEqual([]);
    expect(ended.transcript.map((t: any) => t.role)).toEqual(['agent', 'user', 'agent']);
    // The cut turn keeps the words heard: 300 ms of 2,000 ms played, so 15 % of its text, marked interrupted.
    expect(ended.transcript[0]).toMatchObject({ role: 'agent', text: 'Let me', interrupted: true });
    expect(ended.transcript[2]).not.toHaveProperty('interrupted');
  });
});

describe('silence', () => {
  it('reminds a silent caller after the agent audio has played, then hangs up', async () => {
    const creates: number[] = [];
    let lastPlayed = 0;
    scripts.set('script-silent', async (m) => {
      await session(m);
      await m.next('response.create');
      creates.push(Date.now());
      m.speak({ responseId: 'resp_1', itemId: 'item_1', audio: tone(0.3, 31), transcript: 'Hello?' });
      const reminder = await m.next('response.create', () => true, 5000);
      creates.push(Date.now());
      expect(reminder.response.instructions).toMatch(/silent/);
      m.speak({ responseId: 'resp_2', itemId: 'item_2', audio: tone(0.3, 32), transcript: 'Are you still there?' });
    });
    // Hold the greeting's marks: the silence timer must not start while it plays.
    const { org, call, sid, client } = await answeredCall(
      { s2s_model: 'script-silent', begin_message: 'Hello?', reminder_trigger_ms: 400, reminder_max_count: 1, end_call_after_silence: true },
      { autoEcho: false },
    );
    await client.until(() => client.marks.length === 3, 'the greeting');
    await new Promise((r) => setTimeout(r, 700));
    expect(creates).toHaveLength(1);
    lastPlayed = Date.now();
    client.echoMarks();
    client.autoEcho = true;
    await client.until(() => updates.some((u) => u.sid === sid), 'the hang-up', 10_000);
    await client.closed;
    expect(creates[1]! - lastPlayed).toBeGreaterThanOrEqual(350);
    const ended = await carrierEnds(org, call.id, sid);
    expect(ended).toMatchObject({ disconnection_reason: 'completed' });
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hello?', 'Are you still there?']);
  });
});

describe('knowledge base and webhook tools on a call', () => {
  it('offers search_knowledge_base when the agent has a knowledge base, answers it from the ranking, and runs a signed webhook tool', async () => {
    const hits: { headers: Record<string, unknown>; body: string }[] = [];
    const hook = createServer(async (req, res) => {
      hits.push({ headers: req.headers as Record<string, unknown>, body: await readBody(req) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"booked":true}');
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    // The receiver is on loopback: the egress guard refuses it unless loopback is opened (as the local runtime can).
    process.env.ALLOW_LOOPBACK_FETCH = 'true';
    resetConfig();
    try {
      let tools: any[] = [];
      const outputs: any[] = [];
      scripts.set('script-kb', async (m) => {
        tools = (await session(m)).session.tools;
        await m.next('response.create');
        m.speak({ responseId: 'resp_1', itemId: 'item_1', audio: tone(0.2, 51), transcript: 'Hello.' });
        m.userSays('item_u1', 'Where can I park?');
        m.speak({ responseId: 'resp_2', itemId: 'item_2', calls: [{ callId: 'call_kb', name: 'search_knowledge_base', args: { query: 'where to park' } }] });
        outputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'call_kb'));
        await m.next('response.create');
        m.speak({ responseId: 'resp_3', itemId: 'item_3', calls: [{ callId: 'call_hook', name: 'hold_table', args: { day: 'Friday' } }] });
        outputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'call_hook'));
        await m.next('response.create');
        m.speak({ responseId: 'resp_4', itemId: 'item_4', audio: tone(0.2, 52), transcript: 'Parking is behind the store, and Friday is held. Bye!', calls: [{ callId: 'call_end', name: 'end_call', args: {} }] });
      });
      const kbOrg = await organization({});
      const kb = await createKnowledgeBase(kbOrg.org, { name: 'store', description: '' });
      const before = queued.length;
      await ingest(kbOrg.org, IngestBody.parse({ kb_id: kb.id, doc_id: 'parking', text: 'Parking is free in the lot behind the store. The store opens at nine.' }));
      const messages = queued.slice(before).filter((q) => q.queue === 'rag-ingest').map((q) => q.body);
      const worker = ingestBatchHandler(3);
      await worker({ Records: messages.map((m, i) => ({ messageId: `kb-${i}`, receiptHandle: 'r', body: JSON.stringify(m), attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 't', ApproximateFirstReceiveTimestamp: '0' }, messageAttributes: {}, md5OfBody: '', eventSource: 'aws:sqs', eventSourceARN: 'arn:aws:sqs:local:0:rag-ingest', awsRegion: 'local' })) } as never);
      const tool = await createTool(kbOrg.org, CreateToolBody.parse({ name: 'Hold', type: 'webhook', url: `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hold`, definition: { name: 'hold_table', parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] } } }));
      const { call, sid, client } = await answeredCallIn(kbOrg, {
        s2s_model: 'script-kb', begin_message: 'Hello.', knowledge_base: kb.id, selected_tools: [{ tool_id: tool.id }, { type: 'end_call' }],
      });
      await client.until(() => updates.some((u) => u.sid === sid), 'the hang-up', 15_000);
      await client.closed;
      expect(tools.map((t) => t.name).sort()).toEqual(['end_call', 'hold_table', 'search_knowledge_base']);
      expect(JSON.parse(outputs[0].item.output)).toMatchObject({ passages: [expect.objectContaining({ source: 'parking', text: expect.stringContaining('behind the store') })] });
      expect(JSON.parse(outputs[1].item.output)).toEqual({ booked: true });
      const verified = new Webhook((tool as { secret: string }).secret).verify(hits[0]!.body, hits[0]!.headers as Record<string, string>) as any;
      expect(verified).toMatchObject({ tool_call_id: 'call_hook', name: 'hold_table', arguments: { day: 'Friday' }, conversation: { type: 'call', id: call.id } });
      const ended = await carrierEnds(kbOrg.org, call.id, sid, 9);
      expect(ended.tool_calls.map((t: any) => t.name)).toEqual(['search_knowledge_base', 'hold_table', 'end_call']);
    } finally {
      delete process.env.ALLOW_LOOPBACK_FETCH;
      resetConfig();
      await new Promise<void>((r) => hook.close(() => r()));
    }
  });
});

describe('maximum duration', () => {
  it('at max_call_duration_ms asks the model for a short goodbye, plays it, then hangs up', async () => {
    let goodbye: any;
    scripts.set('script-long', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'resp_1', itemId: 'item_1', audio: tone(0.2, 41), transcript: 'Hi there.' });
      goodbye = await m.next('response.create', () => true, 5000);
      m.speak({ responseId: 'resp_2', itemId: 'item_2', audio: tone(0.2, 42), transcript: 'We are out of time, goodbye!' });
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-long', begin_message: 'Hi there.', max_call_duration_ms: 900 });
    await client.until(() => updates.some((u) => u.sid === sid), 'the hang-up', 10_000);
    await client.closed;
    expect(goodbye.response.instructions).toMatch(/time limit/);
    const ended = await carrierEnds(org, call.id, sid, 1);
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hi there.', 'We are out of time, goodbye!']);
  });
});

describe('voicemail', () => {
  it('leaves the voicemail message on a machine and ends the call as voicemail', async () => {
    let sessionConfig: any;
    let leave: any;
    scripts.set('script-voicemail', async (m) => {
      sessionConfig = (await session(m)).session;
      leave = await m.next('response.create');
      m.speak({ responseId: 'resp_1', itemId: 'item_vm', audio: tone(0.5, 41), transcript: 'Hi Bo, this is Ava. Please call us back.' });
    });
    const { org, call, sid, client, parameters } = await answeredCall(
      { s2s_model: 'script-voicemail', enable_voicemail_detection: true, voicemail_message: 'Hi {{contact.first_name}}, this is {{agent_name}}. Please call us back.', begin_message: 'Hello!' },
      { answeredBy: 'machine_end_beep', contact: { first_name: 'Bo', phone: '+14155550142' } },
    );
    expect(parameters.answered_by).toBe('machine_end_beep');
    await client.until(() => updates.some((u) => u.sid === sid), 'the hang-up');
    await client.closed;
    expect(leave.response.instructions).toContain('Hi Bo, this is Ava. Please call us back.');
    // No VAD while the message is left: a beep or a greeting must not cut it.
    expect(sessionConfig.audio.input.turn_detection).toBeNull();
    expect(Buffer.concat(client.media).equals(tone(0.5, 41))).toBe(true);
    const ended = await carrierEnds(org, call.id, sid, 9);
    expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'voicemail', duration_sec: 0 });
  });
});

describe('admission', () => {
  it('refuses a forged, foreign or missing token, a malformed frame and an oversized message, without touching a live call', async () => {
    let live: ModelConnection | undefined;
    scripts.set('script-live', async (m) => {
      live = m;
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'resp_1', itemId: 'item_1', audio: tone(0.2, 51), transcript: 'Hello.' });
    });
    const a = await answeredCall({ s2s_model: 'script-live', begin_message: 'Hello.' });
    await a.client.until(() => a.client.media.length > 0, 'the greeting');
    const token = a.parameters.token!;
    const [payload, mac] = token.split('.');
    const forgedPayload = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), call_id: uuidv7() })).toString('base64url');
    const attempts: Record<string, string>[] = [
      {},
      { ...a.parameters, token: `${forgedPayload}.${mac}` },
      { ...a.parameters, token: `${payload}.${Buffer.alloc(32).toString('base64url')}` },
      { ...a.parameters, call_id: uuidv7() },
    ];
    for (const customParameters of attempts) {
      const c = await TwilioMediaClient.connect(voice.url, { callSid: a.sid, customParameters });
      expect((await c.closed).code).toBe(1008);
    }
    // The live call's own token, used for a second stream, is refused too.
    const replay = await TwilioMediaClient.connect(voice.url, { callSid: a.sid, customParameters: a.parameters });
    expect((await replay.closed).code).toBe(1008);
    // Not JSON; media before start; a message over the limit.
    for (const bad of ['not json', JSON.stringify({ event: 'media', media: { payload: 'AAAA' } })]) {
      const ws = new WebSocket(voice.url);
      await new Promise((r) => ws.once('open', r));
      ws.send(bad);
      expect(await new Promise((r) => ws.once('close', (code) => r(code)))).toBe(1008);
    }
    const big = new WebSocket(voice.url);
    await new Promise((r) => big.once('open', r));
    big.send('x'.repeat(100 * 1024));
    expect(await new Promise((r) => big.once('close', (code) => r(code)))).toBe(1009);
    // The live call went on.
    expect(a.client.open).toBe(true);
    await a.client.play(tone(0.2, 52));
    await live!.until(() => live!.inputAudio().length === tone(0.2, 52).length, 'audio after the refusals');
    a.client.stop();
    await a.client.closed;
    await carrierEnds(a.org, a.call.id, a.sid);
  });
});

describe('two calls at once', () => {
  it('keeps their audio, transcripts and tools apart', async () => {
    const script = (n: number) => async (m: ModelConnection) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: `r${n}`, itemId: `i${n}`, audio: tone(0.4, 60 + n), transcript: `Hello caller ${n}` });
      await m.until(() => m.inputAudio().length >= 1600, 'caller audio');
      m.userSays(`u${n}`, `I am caller ${n}`);
    };
    scripts.set('script-two-1', script(1));
    scripts.set('script-two-2', script(2));
    const [one, two] = await Promise.all([
      answeredCall({ s2s_model: 'script-two-1', begin_message: 'x' }),
      answeredCall({ s2s_model: 'script-two-2', begin_message: 'x' }),
    ]);
    // Each caller speaks once the greeting has played (its marks echoed first, on the same socket): not an interruption.
    await Promise.all([one, two].map((c) => c.client.until(() => c.client.media.length >= 4, 'agent audio')));
    await Promise.all([one.client.play(mulawRecording(0.2, 101), 1), two.client.play(mulawRecording(0.2, 102), 1)]);
    await new Promise((r) => setTimeout(r, 200));
    for (const c of [one, two]) {
      c.client.stop();
      await c.client.closed;
    }
    const [e1, e2] = await Promise.all([carrierEnds(one.org, one.call.id, one.sid), carrierEnds(two.org, two.call.id, two.sid)]);
    expect(Buffer.concat(one.client.media).equals(tone(0.4, 61))).toBe(true);
    expect(Buffer.concat(two.client.media).equals(tone(0.4, 62))).toBe(true);
    const m1 = model.connections.find((c) => c.model === 'script-two-1')!;
    const m2 = model.connections.find((c) => c.model === 'script-two-2')!;
    expect(m1.inputAudio().equals(mulawRecording(0.2, 101))).toBe(true);
    expect(m2.inputAudio().equals(mulawRecording(0.2, 102))).toBe(true);
    expect(e1.transcript.map((t: any) => t.text)).toEqual(['Hello caller 1', 'I am caller 1']);
    expect(e2.transcript.map((t: any) => t.text)).toEqual(['Hello caller 2', 'I am caller 2']);
  });
});

describe('an inbound call', () => {
  it('is answered by the number\'s agent through the inbound webhook and ends with its transcript and tool calls', async () => {
    const { updatePhoneNumber, listPhoneNumbers } = await import('../../shared/domain/phone-numbers/service');
    const { handler: twilioInbound } = await import('../../functions/telephony/twilio-inbound');
    scripts.set('script-inbound', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.3, 71), transcript: 'Thanks for calling Acme.' });
      await m.until(() => m.inputAudio().length >= 800, 'caller audio');
      m.userSays('u1', 'I need a person.');
      m.speak({ responseId: 'r2', itemId: 'i2', audio: tone(0.2, 72), transcript: 'Transferring you now.', calls: [{ callId: 'c1', name: 'transfer_call', args: { reason: 'asked for a person' } }] });
    });
    const { org, agentId, from } = await organization({ s2s_model: 'script-inbound', begin_message: 'Thanks for calling.', selected_tools: [{ type: 'transfer_call', phone_number: '+14155550199' }] }, { bought: true });
    const number = (await listPhoneNumbers(org, { limit: 10 } as never)).items.find((n: any) => n.phone_number === from)!;
    await updatePhoneNumber(org, number.id, { inbound_agent_id: agentId } as never);
    const sid = `CA${'9'.repeat(28)}${String(++sidSeq).padStart(4, '0')}`;
    const params = { CallSid: sid, From: '+14155550177', To: from, Direction: 'inbound' };
    const path = '/api/v1/telephony/twilio/inbound';
    const res = await twilioInbound(apiEvent({
      method: 'POST', path,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}${path}`, params) },
      body: new URLSearchParams(params).toString(),
    }), lambdaContext);
    const stream = streamOf(res.body as string);
    const callId = stream.parameters.call_id!;
    expect(stream.parameters.direction).toBe('inbound');
    const client = await TwilioMediaClient.connect(stream.url, { callSid: sid, customParameters: stream.parameters });
    streams.set(sid, client);
    await client.until(() => client.media.length > 0, 'the greeting');
    await client.play(mulawRecording(0.1, 73));
    await client.until(() => updates.some((u) => u.sid === sid), 'the transfer', 10_000);
    await client.closed;
    // The live call's new instructions dial the transfer number.
    expect(updates.find((u) => u.sid === sid)!.form.get('Twiml')).toMatch(/^<Response><Dial timeout="\d+">\+14155550199<\/Dial><\/Response>$/);
    const ended = await carrierEnds(org, callId, sid, 40);
    expect(ended).toMatchObject({ direction: 'inbound', status: 'ended', disconnection_reason: 'transferred', duration_sec: 40 });
    expect(ended.transcript.map((t: any) => [t.role, t.text])).toEqual([['agent', 'Thanks for calling Acme.'], ['user', 'I need a person.'], ['agent', 'Transferring you now.']]);
    expect(ended.tool_calls).toEqual([expect.objectContaining({ name: 'transfer_call', arguments: { reason: 'asked for a person' }, result: { transferring_to: '+14155550199', mode: 'cold' } })]);
    // The minutes are charged to the organization's number (the called one), named as an inbound call.
    const charges = (await listCharges(org, { limit: 100, offset: 0 })).items.filter((c) => c.resource_id === callId);
    expect(charges).toEqual([expect.objectContaining({ reason: 'call_minutes', phone_number: ended.to_phone_number, description: expect.stringMatching(/^Inbound call from \+/) })]);
  });
});

describe('failures and order', () => {
  it('ends the call politely when the model fails mid-call: the carrier apologizes and hangs up, and the call keeps why', async () => {
    scripts.set('script-fails', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 81), transcript: 'Hello.' });
      await m.until(() => m.inputAudio().length >= 800, 'caller audio');
      m.close(1011);
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-fails', begin_message: 'Hello.' });
    await client.play(tone(0.1, 82));
    await client.until(() => updates.some((u) => u.sid === sid), 'the apology', 10_000);
    await client.closed;
    expect(updates.find((u) => u.sid === sid)!.form.get('Twiml')).toMatch(/<Say>Sorry.*<\/Say><Hangup\/>/);
    const ended = await carrierEnds(org, call.id, sid);
    expect(ended).toMatchObject({ disconnection_reason: 'failed', error_message: expect.stringMatching(/speech model failed/) });
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hello.']);
  });

  it('an `error` event from the model ends the call the same way (beta event names understood)', async () => {
    scripts.set('script-error', async (m) => {
      await session(m);
      await m.next('response.create');
      // Beta names: response.audio.delta / response.audio_transcript.done.
      m.send({ type: 'response.created', response: { id: 'r1' } });
      m.send({ type: 'response.audio.delta', response_id: 'r1', item_id: 'i1', delta: tone(0.1, 91).toString('base64') });
      m.send({ type: 'response.audio_transcript.done', response_id: 'r1', item_id: 'i1', transcript: 'Hi there.' });
      m.send({ type: 'response.done', response: { id: 'r1', status: 'completed', output: [] } });
      await new Promise((r) => setTimeout(r, 50));
      m.send({ type: 'error', error: { type: 'server_error', code: 'server_error', message: 'The server had an error' } });
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-error', begin_message: 'Hi' });
    await client.until(() => updates.some((u) => u.sid === sid), 'the apology', 10_000);
    await client.closed;
    expect(Buffer.concat(client.media).equals(tone(0.1, 91))).toBe(true);
    const ended = await carrierEnds(org, call.id, sid);
    expect(ended).toMatchObject({ disconnection_reason: 'failed', error_message: expect.stringMatching(/The server had an error/) });
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hi there.']);
  });

  it('when the carrier\'s end arrives before the stream stops, the call is corrected and analysed with its transcript', async () => {
    scripts.set('script-late-stop', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 95), transcript: 'Good morning.' });
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-late-stop', begin_message: 'Good morning.' });
    await client.until(() => client.marks.length === 2, 'the greeting');
    await new Promise((r) => setTimeout(r, 100));
    const analysesBefore = queued.filter((q) => q.queue === 'call-analysis' && q.body.call_id === call.id).length;
    await status(org, call.id, sid, 'completed', { durationSec: 5 });
    const early = (await getItem<CallItem>(keys.call(org, call.id)))!;
    expect(early).toMatchObject({ status: 'ended', transcript: [] });
    client.stop();
    await client.closed;
    await sessionOver(call.id);
    const after = (await getItem<CallItem & Record<string, any>>(keys.call(org, call.id)))!;
    expect(after.transcript.map((t: any) => t.text)).toEqual(['Good morning.']);
    expect(after.error_message ?? null).toBeNull();
    expect(queued.filter((q) => q.queue === 'call-analysis' && q.body.call_id === call.id).length).toBe(analysesBefore + 2);
  });

  it('a call still open when the runtime stops (drain time spent) is ended with the apology and the reason recorded', async () => {
    scripts.set('script-shutdown', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.1, 97), transcript: 'Hello.' });
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-shutdown', begin_message: 'Hello.' });
    await client.until(() => client.media.length > 0, 'the greeting');
    await voice.sessions.get(call.id)!.shutdown();
    await client.until(() => updates.some((u) => u.sid === sid), 'the apology');
    await client.closed;
    expect(updates.find((u) => u.sid === sid)!.form.get('Twiml')).toMatch(/<Say>Sorry/);
    const ended = await carrierEnds(org, call.id, sid);
    expect(ended).toMatchObject({ disconnection_reason: 'failed', error_message: expect.stringMatching(/voice runtime was stopped/) });
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hello.']);
  });

  it('a call whose runtime died mid-call (stream admitted, never recorded) ends with the reason recorded', async () => {
    const { transact, updateExisting } = await import('../../shared/db/store');
    const { VOICE_LOST_MESSAGE } = await import('../../shared/domain/calls/voice-session');
    const { org, agentId, from } = await organization({ begin_message: 'x' });
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550143' }));
    await placeQueuedCall(org, call.id);
    const sid = (await getItem<CallItem>(keys.call(org, call.id)))!.provider_call_id!;
    await status(org, call.id, sid, 'in-progress');
    // What the runtime writes when it admits a stream; it then dies before writing the conversation.
    await transact([updateExisting(keys.call(org, call.id), { voice_stream_at: new Date().toISOString() })]);
    const ended = await carrierEnds(org, call.id, sid, 30);
    expect(ended).toMatchObject({ status: 'ended', error_message: VOICE_LOST_MESSAGE });
  });
});

describe('tool calls as the Realtime reference sends them', () => {
  it('answers arguments that are not a valid JSON object with an error the model hears: a truncated transfer_call never transfers', async () => {
    const outputs: any[] = [];
    let asked: any;
    scripts.set('script-bad-args', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 111), transcript: 'Hello.' });
      m.userSays('u1', 'Put me through to a person, and check Friday.');
      // The arguments cut short (a response that ran out of tokens), and a date of the wrong type.
      m.speak({ responseId: 'r2', itemId: 'i2', calls: [
        { callId: 'c_transfer', name: 'transfer_call', argsText: '{"reason":"asked for a per' },
        { callId: 'c_check', name: 'check_availability', args: { start_date: 20301202 } },
      ] });
      outputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'c_transfer'));
      outputs.push(await m.next('conversation.item.create', (e) => e.item?.type === 'function_call_output' && e.item.call_id === 'c_check'));
      asked = await m.next('response.create');
      m.speak({ responseId: 'r3', itemId: 'i3', audio: tone(0.2, 112), transcript: 'Sorry, let me try that again.' });
    });
    const { org, call, sid, client } = await answeredCall({
      s2s_model: 'script-bad-args', begin_message: 'Hello.',
      selected_tools: [{ type: 'transfer_call', phone_number: '+14155550199' }, { type: 'check_availability' }],
    });
    await client.until(() => client.media.length >= Math.ceil(tone(0.2, 111).length / 800) + Math.ceil(tone(0.2, 112).length / 800), 'the answer after the errors');
    expect(JSON.parse(outputs[0].item.output)).toEqual({ error: expect.stringMatching(/^invalid arguments: the arguments are not valid JSON/) });
    expect(JSON.parse(outputs[1].item.output)).toEqual({ error: expect.stringMatching(/^invalid arguments: "start_date" must be a string/) });
    expect(asked).toBeDefined();
    // Nothing reached the carrier: no transfer, the call goes on.
    expect(updates.some((u) => u.sid === sid)).toBe(false);
    expect(client.open).toBe(true);
    client.stop();
    await client.closed;
    const ended = await carrierEnds(org, call.id, sid);
    expect(ended.disconnection_reason).toBe('completed');
    expect(ended.tool_calls).toEqual([
      expect.objectContaining({ name: 'transfer_call', arguments: {}, result: { error: expect.stringMatching(/not valid JSON/), arguments_text: '{"reason":"asked for a per' } }),
      expect.objectContaining({ name: 'check_availability', arguments: {}, result: expect.objectContaining({ error: expect.stringMatching(/start_date/) }) }),
    ]);
  });
});

describe('end_call_after_silence with reminders off', () => {
  it('hangs up after reminder_trigger_ms of silence when reminder_max_count is 0 (no reminder)', async () => {
    let creates = 0;
    scripts.set('script-silence-no-reminder', async (m) => {
      await session(m);
      await m.next('response.create');
      creates++;
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 121), transcript: 'Hello?' });
      await m.closed;
      creates += m.received.filter((e) => e.type === 'response.create').length - 1;
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-silence-no-reminder', begin_message: 'Hello?', reminder_trigger_ms: 300, reminder_max_count: 0, end_call_after_silence: true });
    await client.until(() => updates.some((u) => u.sid === sid), 'the hang-up', 10_000);
    await client.closed;
    expect(updates.find((u) => u.sid === sid)!.form.get('Status')).toBe('completed');
    const ended = await carrierEnds(org, call.id, sid);
    expect(creates).toBe(1);
    expect(ended).toMatchObject({ disconnection_reason: 'completed' });
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hello?']);
  });

  it('hangs up after VOICE_SILENCE_END_MS of silence when reminder_trigger_ms is 0, counted from when the agent audio has played', async () => {
    process.env.VOICE_SILENCE_END_MS = '300';
    try {
      scripts.set('script-silence-off', async (m) => {
        await session(m);
        await m.next('response.create');
        m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 122), transcript: 'Hello?' });
      });
      const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-silence-off', begin_message: 'Hello?', reminder_trigger_ms: 0, reminder_max_count: 2, end_call_after_silence: true }, { autoEcho: false });
      await client.until(() => client.pendingMarks === 2, 'the greeting');
      // The greeting has not played yet (marks held): no silence is counted.
      await new Promise((r) => setTimeout(r, 600));
      expect(updates.some((u) => u.sid === sid)).toBe(false);
      const played = Date.now();
      client.echoMarks();
      await client.until(() => updates.some((u) => u.sid === sid), 'the hang-up', 10_000);
      expect(Date.now() - played).toBeGreaterThanOrEqual(250);
      await client.closed;
      const ended = await carrierEnds(org, call.id, sid);
      expect(ended).toMatchObject({ disconnection_reason: 'completed' });
    } finally {
      delete process.env.VOICE_SILENCE_END_MS;
    }
  });
});

describe('the stream\'s end', () => {
  it('ends an inbound call without any carrier status callback, when the caller hangs up and when the agent does', async () => {
    const { updatePhoneNumber, listPhoneNumbers } = await import('../../shared/domain/phone-numbers/service');
    const { handler: twilioInbound } = await import('../../functions/telephony/twilio-inbound');
    scripts.set('script-inbound-end', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 131), transcript: 'Thanks for calling. Goodbye.', calls: [{ callId: 'c_end', name: 'end_call', args: {} }] });
    });
    scripts.set('script-inbound-hangs', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: tone(0.2, 132), transcript: 'Thanks for calling.' });
    });
    const made = await organization({ s2s_model: 'script-inbound-end', begin_message: 'Thanks for calling.', selected_tools: [{ type: 'end_call' }] });
    const number = (await listPhoneNumbers(made.org, { limit: 10 } as never)).items.find((n: any) => n.phone_number === made.from)!;
    const inbound = async (agentId: string) => {
      await updatePhoneNumber(made.org, number.id, { inbound_agent_id: agentId } as never);
      const sid = `CA${'8'.repeat(28)}${String(++sidSeq).padStart(4, '0')}`;
      const params = { CallSid: sid, From: '+14155550177', To: made.from, Direction: 'inbound' };
      const path = '/api/v1/telephony/twilio/inbound';
      const res = await twilioInbound(apiEvent({
        method: 'POST', path,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}${path}`, params) },
        body: new URLSearchParams(params).toString(),
      }), lambdaContext);
      const stream = streamOf(res.body as string);
      const client = await TwilioMediaClient.connect(stream.url, { callSid: sid, customParameters: stream.parameters });
      streams.set(sid, client);
      return { sid, client, callId: stream.parameters.call_id! };
    };
    // The agent hangs up (end_call): no status callback ever comes.
    const a = await inbound(made.agentId);
    await a.client.until(() => updates.some((u) => u.sid === a.sid), 'the hang-up', 10_000);
    await a.client.closed;
    await sessionOver(a.callId);
    const endedA = (await getItem<CallItem & Record<string, any>>(keys.call(made.org, a.callId)))!;
    expect(endedA).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
    expect(endedA.transcript.map((t: any) => t.text)).toEqual(['Thanks for calling. Goodbye.']);
    // The caller hangs up (the stream stops).
    const other = await createAgent(made.org, { name: 'Voice', agent_name: 'Ava', reminder_trigger_ms: 0, s2s_model: 'script-inbound-hangs', begin_message: 'Thanks for calling.' } as never);
    const b = await inbound(other.id);
    await b.client.until(() => b.client.media.length > 0, 'the greeting');
    b.client.stop();
    await b.client.closed;
    await sessionOver(b.callId);
    const endedB = (await getItem<CallItem & Record<string, any>>(keys.call(made.org, b.callId)))!;
    expect(endedB).toMatchObject({ status: 'ended', disconnection_reason: 'completed' });
  });
});

describe('ambient sound', () => {
  it('mixes the agent\'s ambient sound under its audio and fills the silences with it, for the whole call', async () => {
    const greeting = tone(0.4, 131);
    scripts.set('script-ambient', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: greeting, transcript: 'Hello from the office.' });
      await m.closed;
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-ambient', begin_message: 'Hello from the office.', ambient_sound: 'office', ambient_sound_volume: 0.8 }, { autoEcho: true });
    // The silence after the greeting is filled with the bed too: well past the greeting's own length.
    await client.until(() => Buffer.concat(client.media).length >= greeting.length + 160 * 15, 'the bed after the greeting');
    client.stop();
    await client.closed;
    const heard = Buffer.concat(client.media);
    // Never pure silence (μ-law 0xFF / 0x7F), and the greeting never went out untouched: it was mixed.
    expect(heard.some((b) => b !== 0xff && b !== 0x7f)).toBe(true);
    expect(heard.includes(greeting.subarray(0, 800))).toBe(false);
    const ended = await carrierEnds(org, call.id, sid);
    expect(ended.transcript.map((t: any) => t.text)).toEqual(['Hello from the office.']);
  });

  it('sends nothing of its own without ambient_sound: the agent\'s audio byte for byte', async () => {
    const greeting = tone(0.4, 132);
    scripts.set('script-no-ambient', async (m) => {
      await session(m);
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: greeting, transcript: 'Hello.' });
      await m.closed;
    });
    const { org, call, sid, client } = await answeredCall({ s2s_model: 'script-no-ambient', begin_message: 'Hello.' }, { autoEcho: true });
    await client.until(() => Buffer.concat(client.media).length >= greeting.length, 'the greeting');
    client.stop();
    await client.closed;
    expect(Buffer.concat(client.media).equals(greeting)).toBe(true);
    await carrierEnds(org, call.id, sid);
  });
});

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetTelephony } from '../../shared/adapters/telephony';
import { twilioSignature } from '../../shared/adapters/telephony/twilio-signature';
import { keys, Prefix } from '../../shared/db/keys';
import { getItem, queryAll } from '../../shared/db/store';
import { createAgent } from '../../shared/domain/agents/service';
import { listCharges } from '../../shared/domain/billing/service';
import { handleCallEventMessage } from '../../shared/domain/calls/carrier-events';
import { placeQueuedCall, type CallEventMessage } from '../../shared/domain/calls/lifecycle';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { CreateCallBody } from '../../shared/domain/calls/schemas';
import { createCall, getCall, type CallItem } from '../../shared/domain/calls/service';
import { createContact } from '../../shared/domain/contacts/service';
import { addDncEntry } from '../../shared/domain/dnc/service';
import { AddDncBody } from '../../shared/domain/dnc/schemas';
import { handler as twilioStatus } from '../../functions/telephony/twilio-status';
import { handler as twilioRecording } from '../../functions/telephony/twilio-recording';
import { handler as twilioTwiml } from '../../functions/telephony/twilio-twiml';
import { logger } from '../../shared/logger';
import { apiEvent, lambdaContext } from '../support/events';
import { buyFromPool } from '../support/numbers';
import { twilioAuthorized, twilioEnvironment } from '../support/twilio-env';
import { readBody } from '../support/stand-in';

logger.setLogLevel('SILENT');

/**
 * The call lifecycle against DynamoDB Local and the S3 emulator, through the same functions the
 * jobs run (call-place, call-events, call-recovery) and the Twilio callback handlers. The queue
 * is a capturing stand-in, so each test delivers carrier events itself, in the order it wants.
 */
const sent: { queue: string; body: any; delaySeconds?: number }[] = [];
beforeAll(() => installLocalQueue({ send: async (queue, body, options) => void sent.push({ queue, body, delaySeconds: options?.delaySeconds }) }));
afterAll(() => installLocalQueue(undefined));
const statusMessages = (callId: string) => sent.filter((m) => m.queue === 'call-events' && m.body.call_id === callId).map((m) => m.body as CallEventMessage & { kind: 'status' });

async function organization(agent: Record<string, unknown> = {}) {
  const org = uuidv7();
  // Numbers come from the simulated carrier's pool, whichever carrier then places the calls.
  const carrier = process.env.TELEPHONY_PROVIDER;
  process.env.TELEPHONY_PROVIDER = 'simulated';
  resetTelephony();
  let bought;
  try {
    bought = await buyFromPool(org, '206');
  } finally {
    if (carrier === undefined) delete process.env.TELEPHONY_PROVIDER;
    else process.env.TELEPHONY_PROVIDER = carrier;
    resetTelephony();
  }
  const { number, choice } = bought;
  const created = await createAgent(org, { name: 'Caller', begin_message: 'Hello {{name}}', ...agent } as never);
  return { org, agentId: created.id, from: number.phone_number, price: choice.per_minute_price_outbound };
}

const item = (org: string, id: string) => getItem<CallItem>(keys.call(org, id)) as Promise<CallItem>;

async function eventsOf(org: string, callId: string) {
  const types: string[] = [];
  // The outbox item keeps the event serialized once (`body`), exactly as it is delivered.
  for await (const item of queryAll<{ body: string }>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: Prefix.event })) {
    const e = JSON.parse(item.body) as { type: string; data: { id: string } };
    if (e.data.id === callId) types.push(e.type);
  }
  return types;
}

describe('the call state machine, fed through the call-events job', () => {
  it('changes nothing on duplicate, late or out-of-order carrier events; charges and records once', async () => {
    // Prepare
    const { org, agentId, from, price } = await organization();
    const contact = await createContact(org, { first_name: 'Ann' });
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550121', contact_id: contact.id }));
    await placeQueuedCall(org, call.id);
    const course = statusMessages(call.id);
    expect(course.map((m) => m.event.status)).toEqual(['queued', 'ringing', 'in-progress', 'completed']);
    const [queued, ringing, answered, completed] = course;
    // Act: out of order, with duplicates and a late ringing
    await handleCallEventMessage(answered!);
    await handleCallEventMessage(ringing!);
    await handleCallEventMessage(answered!);
    const midway = await item(org, call.id);
    await handleCallEventMessage(queued!);
    // Assess: answered, and the late events wrote nothing
    expect(midway).toMatchObject({ status: 'in_progress', answered_at: answered!.event.at });
    expect((await item(org, call.id)).version).toBe(midway.version);

    // Act: the end, twice, then a late ringing
    await handleCallEventMessage(completed!);
    const ended = await item(org, call.id);
    await handleCallEventMessage(completed!);
    await handleCallEventMessage(ringing!);
    // Assess
    const after = await item(org, call.id);
    expect(after).toMatchObject({ status: 'ended', disconnection_reason: 'completed', duration_sec: 3, version: ended.version, finalized_at: expect.any(String) });
    // A placeholder with no value becomes an empty string (operations.md, "Agent fields added").
    expect(after.transcript[0]).toEqual({ role: 'agent', text: 'Hello', time_sec: 0, agent_id: after.agent_id });
    expect(after.recording_key).toBe(`orgs/${org}/recordings/${call.id}.wav`);
    expect(await eventsOf(org, call.id)).toEqual(['call.started', 'call.ended']);
    const charges = (await listCharges(org, { limit: 100, offset: 0 })).items.filter((c) => c.reason === 'call_minutes');
    // Charges keep the carrier's precision (1/10,000 of the unit): one minute costs the price exactly.
    expect(charges).toEqual([expect.objectContaining({ resource_id: call.id, amount: Math.round(price * 10_000) / 10_000 })]);
    expect((await getItem<{ stats: { total_calls: number } }>(keys.contact(org, contact.id)))!.stats.total_calls).toBe(1);
    expect(sent.filter((m) => m.queue === 'call-analysis' && m.body.call_id === call.id).length).toBe(1);
  });

  it('ends a call at once when `completed` arrives before it was seen answered, and emits both events', async () => {
    const { org, agentId, from } = await organization();
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550122' }));
    await placeQueuedCall(org, call.id);
    const course = statusMessages(call.id);
    await handleCallEventMessage(course[3]!);
    await handleCallEventMessage(course[1]!);
    await handleCallEventMessage(course[2]!);
    const after = await getCall(org, call.id);
    expect(after).toMatchObject({ status: 'ended', disconnection_reason: 'completed', duration_sec: 3, recording_url: expect.stringContaining('X-Amz-Signature') });
    expect(Date.parse(after.ended_at!) - Date.parse(after.answered_at!)).toBe(3000);
    expect(await eventsOf(org, call.id)).toEqual(['call.started', 'call.ended']);
  });

  it('emits one call.started when the answer and the end are handled at once, both reading the call before either writes', async () => {
    // Prepare
    const { org, agentId, from } = await organization();
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550123' }));
    await placeQueuedCall(org, call.id);
    const [, ringing, answered, completed] = statusMessages(call.id);
    await handleCallEventMessage(ringing!);
    // Act: both handlers issue their read before either write lands
    await Promise.all([handleCallEventMessage(answered!), handleCallEventMessage(completed!)]);
    // Assess
    expect(await eventsOf(org, call.id)).toEqual(['call.started', 'call.ended']);
    expect(await item(org, call.id)).toMatchObject({ status: 'ended', answered_at: answered!.event.at, duration_sec: 3 });
  });

  it('never dials a number listed on the do-not-call list after the call was queued', async () => {
    // Prepare
    const { org, agentId, from } = await organization();
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550123' }));
    await addDncEntry(org, AddDncBody.parse({ phone: '+14155550123' }));
    // Act
    await placeQueuedCall(org, call.id);
    await placeQueuedCall(org, call.id); // a redelivered job
    // Assess
    const after = await item(org, call.id);
    expect(after).toMatchObject({ status: 'ended', disconnection_reason: 'canceled', error_message: 'on do-not-call list', started_at: null, duration_sec: 0 });
    expect(after.provider_call_id).toBeUndefined();
    expect(after.dial_claimed_at).toBeUndefined();
    expect(statusMessages(call.id)).toEqual([]);
    expect(await eventsOf(org, call.id)).toEqual(['call.ended']);
  });
});

describe('the recovery sweep', () => {
  it('ends failed a call that got no final event by its due time, and only then', async () => {
    // Prepare: answered, then the carrier goes silent
    const { org, agentId, from } = await organization({ ring_duration_ms: 1000, max_call_duration_ms: 60_000 });
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550124' }));
    await placeQueuedCall(org, call.id);
    const course = statusMessages(call.id);
    await handleCallEventMessage(course[1]!);
    await handleCallEventMessage(course[2]!);
    const answered = await item(org, call.id);
    expect(answered.due_at).toBe(new Date(Date.parse(answered.answered_at!) + 60_000 + 5 * 60_000).toISOString());
    // Act: a minute before due, then a second after (manual clock)
    const early = await runCallRecovery({ now: new Date(Date.parse(answered.due_at!) - 60_000) });
    const stillAnswered = await item(org, call.id);
    const late = await runCallRecovery({ now: new Date(Date.parse(answered.due_at!) + 1000) });
    // Assess
    // The table is shared with other test files whose calls may fall due: this call is what counts.
    expect(stillAnswered.status).toBe('in_progress');
    expect(early.ended).toBeGreaterThanOrEqual(0);
    expect(late.ended).toBeGreaterThanOrEqual(1);
    const after = await item(org, call.id);
    expect(after).toMatchObject({ status: 'ended', disconnection_reason: 'failed', duration_sec: 60, error_message: expect.stringContaining('recovery sweep') });
    expect(after.gsi2pk).toBeUndefined();
    // A late carrier end changes nothing.
    await handleCallEventMessage(course[3]!);
    expect((await item(org, call.id)).version).toBe(after.version);
  });
});

describe('Twilio', () => {
  const SID = 'AC00000000000000000000000000000002';
  const TOKEN = 'calls-test-token';
  const PUBLIC = 'https://api.example.test';
  let server: Server;
  let base: string;
  const posted: URLSearchParams[] = [];
  const environment = twilioEnvironment();

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const url = new URL(req.url!, 'http://stand-in');
      if (!twilioAuthorized(req, SID, TOKEN)) {
        res.writeHead(401, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ code: 20003, message: 'Authenticate', status: 401 }));
      }
      if (req.method === 'POST' && url.pathname === `/2010-04-01/Accounts/${SID}/Calls.json`) {
        posted.push(new URLSearchParams(await readBody(req)));
        res.writeHead(201, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ sid: 'CA11111111111111111111111111111111', status: 'queued', account_sid: SID }));
      }
      if (req.method === 'GET' && url.pathname === `/2010-04-01/Accounts/${SID}/Recordings/RE1.wav`) {
        res.writeHead(200, { 'content-type': 'audio/x-wav' });
        return res.end(Buffer.from('RIFF....WAVEfmt '));
      }
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    environment.set({ TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: base, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN, PUBLIC_BASE_URL: PUBLIC, VOICE_RUNTIME_URL: 'wss://voice.example.test/stream' });
  });

  afterAll(async () => {
    environment.restore();
    await new Promise((r) => server.close(r));
  });

  /** A Twilio callback as Twilio sends it: form-encoded, signed over the public URL and the parameters. */
  const callback = (path: string, callId: string, org: string, params: Record<string, string>, signature?: string) => {
    const query = new URLSearchParams({ organization_id: org, call_id: callId });
    const url = `${PUBLIC}${path}?${query}`;
    const event = apiEvent({
      method: 'POST', path, query: Object.fromEntries(query),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature ?? twilioSignature(TOKEN, url, params) },
      body: new URLSearchParams(params).toString(),
    });
    return event;
  };

  it('places the call through Calls.json and feeds signed status and recording callbacks to the state machine', async () => {
    // Prepare
    const { org, agentId, from } = await organization();
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550125' }));
    // Act: place
    await placeQueuedCall(org, call.id);
    // Assess: Twilio's documented parameters
    const form = posted.at(-1)!;
    const q = `organization_id=${org}&call_id=${call.id}`;
    expect(form.get('To')).toBe('+14155550125');
    expect(form.get('From')).toBe(from);
    expect(form.get('Url')).toBe(`${PUBLIC}/api/v1/telephony/twilio/twiml?${q}`);
    expect(form.get('StatusCallback')).toBe(`${PUBLIC}/api/v1/telephony/twilio/status?${q}`);
    expect(form.getAll('StatusCallbackEvent')).toEqual(['initiated', 'ringing', 'answered', 'completed']);
    expect(form.get('Record')).toBe('true');
    expect(form.get('RecordingStatusCallback')).toBe(`${PUBLIC}/api/v1/telephony/twilio/recording?${q}`);
    expect((await item(org, call.id)).provider_call_id).toBe('CA11111111111111111111111111111111');

    // Act: status callbacks (a forged one first), then the recording
    const sid = 'CA11111111111111111111111111111111';
    const forged = await twilioStatus(callback('/api/v1/telephony/twilio/status', call.id, org, { CallSid: sid, CallStatus: 'completed' }, 'bm90IGEgc2lnbmF0dXJl'), lambdaContext);
    expect(forged.statusCode).toBe(401);
    for (const params of <Record<string, string>[]>[
      { CallSid: sid, CallStatus: 'in-progress', AnsweredBy: 'human', Timestamp: 'Tue, 01 Jul 2025 10:00:05 +0000' },
      { CallSid: sid, CallStatus: 'ringing', Timestamp: 'Tue, 01 Jul 2025 10:00:01 +0000' },
      { CallSid: sid, CallStatus: 'completed', CallDuration: '61', Timestamp: 'Tue, 01 Jul 2025 10:01:06 +0000' },
    ]) {
      const res = await twilioStatus(callback('/api/v1/telephony/twilio/status', call.id, org, params), lambdaContext);
      expect(res.statusCode).toBe(200);
    }
    const rec = await twilioRecording(
      callback('/api/v1/telephony/twilio/recording', call.id, org, { CallSid: sid, RecordingSid: 'RE1', RecordingStatus: 'completed', RecordingUrl: `${base}/2010-04-01/Accounts/${SID}/Recordings/RE1` }),
      lambdaContext,
    );
    expect(rec.statusCode).toBe(200);
    const queued = sent.filter((m) => m.queue === 'call-events' && m.body.call_id === call.id);
    expect(queued.map((m) => m.body.kind)).toEqual(['status', 'status', 'status', 'recording']);
    for (const m of queued) await handleCallEventMessage(m.body);
    // Assess
    const after = await getCall(org, call.id);
    expect(after).toMatchObject({ status: 'ended', disconnection_reason: 'completed', duration_sec: 61, answered_at: '2025-07-01T10:00:05.000Z' });
    const audio = await fetch(after.recording_url!);
    expect(Buffer.from(await audio.arrayBuffer()).toString()).toBe('RIFF....WAVEfmt ');
    const charges = (await listCharges(org, { limit: 100, offset: 0 })).items.filter((c) => c.reason === 'call_minutes');
    expect(charges.map((c) => c.resource_id)).toEqual([call.id]);
  });

  it('answers TwiML that connects the call to the voice runtime', async () => {
    const { org, agentId, from } = await organization();
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: from, to_phone_number: '+14155550126' }));
    const res = await twilioTwiml(callback('/api/v1/telephony/twilio/twiml', call.id, org, { CallSid: 'CA2', AnsweredBy: 'human' }), lambdaContext);
    expect(res.statusCode).toBe(200);
    expect(res.headers?.['content-type']).toBe('text/xml');
    expect(res.body).toContain('<Connect><Stream url="wss://voice.example.test/stream">');
    expect(res.body).toContain(`<Parameter name="call_id" value="${call.id}"/>`);
  });
});

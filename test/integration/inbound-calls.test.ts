import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { verifyToken } from '../../shared/adapters/signed-token';
import { resetTelephony } from '../../shared/adapters/telephony';
import { twilioCarrier } from '../../shared/adapters/telephony/twilio';
import { twilioSignature } from '../../shared/adapters/telephony/twilio-signature';
import { keys } from '../../shared/db/keys';
import { getItem } from '../../shared/db/store';
import { createAgent, updateAgent } from '../../shared/domain/agents/service';
import { handleCallEventMessage } from '../../shared/domain/calls/carrier-events';
import { placeQueuedCall } from '../../shared/domain/calls/lifecycle';
import { CreateCallBody } from '../../shared/domain/calls/schemas';
import { createCall, getCall, listCalls, type CallItem } from '../../shared/domain/calls/service';
import { createContact } from '../../shared/domain/contacts/service';
import { ImportBody, UpdateImportBody, UpdatePhoneNumberBody } from '../../shared/domain/phone-numbers/schemas';
import {
  getPhoneNumber,
  importPhoneNumber,
  updateImportedPhoneNumber,
  updatePhoneNumber,
} from '../../shared/domain/phone-numbers/service';
import { ValidationError } from '../../shared/errors';
import { handler as twilioInbound } from '../../functions/telephony/twilio-inbound';
import { handler as twilioTwiml } from '../../functions/telephony/twilio-twiml';
import { handler as twilioStatus } from '../../functions/telephony/twilio-status';
import { logger } from '../../shared/logger';
import { asFunction } from '../support/access';
import { buyFromPool } from '../support/numbers';
import { apiEvent, lambdaContext } from '../support/events';
import { rejection } from '../support/rejection';
import { readBody } from '../support/stand-in';
import { twilioAuthorized, twilioEnvironment } from '../support/twilio-env';

logger.setLogLevel('SILENT');

/**
 * Inbound calls and the voice stream's TwiML, against DynamoDB Local and a Twilio stand-in: a
 * number's `inbound_agent_id` (buy, import, update), the incoming-call webhook (signature,
 * <Reject/>, a call session `inbound` streamed to the runtime with a stream token) and the
 * outbound instructions (stream token, AnsweredBy, answering-machine detection when placing).
 */
const sent: { queue: string; body: any }[] = [];
beforeAll(() => installLocalQueue({ send: async (queue, body) => void sent.push({ queue, body }) }));
afterAll(() => installLocalQueue(undefined));

const SID = 'AC00000000000000000000000000000021';
const TOKEN = 'inbound-test-token';
const PUBLIC = 'https://api.example.test';
const RUNTIME = 'wss://voice.example.test/stream';
let server: Server;
let base: string;
const posted: { path: string; form: URLSearchParams }[] = [];
const environment = twilioEnvironment();

beforeAll(async () => {
  server = createServer(async (req, res) => {
    const url = new URL(req.url!, 'http://stand-in');
    if (!twilioAuthorized(req, SID, TOKEN)) return res.writeHead(401).end('{}');
    if (req.method === 'POST' && url.pathname === `/2010-04-01/Accounts/${SID}/Calls.json`) {
      posted.push({ path: url.pathname, form: new URLSearchParams(await readBody(req)) });
      res.writeHead(201, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ sid: `CA${uuidv7().replace(/-/g, '')}`, status: 'queued' }));
    }
    if (req.method === 'POST' && url.pathname === `/2010-04-01/Accounts/${SID}/IncomingPhoneNumbers.json`) {
      const form = new URLSearchParams(await readBody(req));
      posted.push({ path: url.pathname, form });
      res.writeHead(201, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ sid: 'PN0000000000000000000000000000000A', phone_number: form.get('PhoneNumber') }));
    }
    res.writeHead(404).end('{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  environment.set({ TELEPHONY_PROVIDER: 'twilio', TWILIO_API_BASE: base, TWILIO_ACCOUNT_SID: SID, TWILIO_AUTH_TOKEN: TOKEN, PUBLIC_BASE_URL: PUBLIC, VOICE_RUNTIME_URL: RUNTIME });
});

afterAll(async () => {
  environment.restore();
  await new Promise((r) => server.close(r));
});

/** Runs `work` with the simulated carrier (its pool of numbers to buy), whatever the test set. */
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

/** A number bought from the simulated pool (other test files buy from it in parallel: retried). */
async function boughtNumber(org: string, extra: Record<string, unknown> = {}) {
  return withSimulatedCarrier(async () => (await buyFromPool(org, '206', { extra, wrap: (work) => asFunction('buyPhoneNumber', work) })).number);
}

/** A fresh E.164 number nobody holds, for imports. */
/** A random valid Seattle number: the exchange never starts with 0 or 1 and is never an N11 code. */
const freshNumber = () => {
  const exchange = `${2 + Math.floor(Math.random() * 8)}${String(Math.floor(Math.random() * 100)).padStart(2, '0').replace(/^11$/, '12')}`;
  return `+1206${exchange}${String(Math.floor(Math.random() * 1e4)).padStart(4, '0')}`;
};

async function organization(agent: Record<string, unknown> = {}) {
  const org = uuidv7();
  const created = await createAgent(org, { name: 'Receptionist', begin_message: 'Hello', ...agent } as never);
  return { org, agentId: created.id };
}

/** Twilio's incoming-call request: form-encoded, signed over the public URL and the parameters. */
function incoming(params: Record<string, string>, signature?: string) {
  const path = '/api/v1/telephony/twilio/inbound';
  return apiEvent({
    method: 'POST', path,
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature ?? twilioSignature(TOKEN, `${PUBLIC}${path}`, params) },
    body: new URLSearchParams(params).toString(),
  });
}

const answerIncoming = (params: Record<string, string>, signature?: string) =>
  asFunction('receiveTwilioInboundCall', () => twilioInbound(incoming(params, signature), lambdaContext));

/** The stream parameters of a TwiML answer. */
function streamParameters(body: string): Record<string, string> {
  return Object.fromEntries([...body.matchAll(/<Parameter name="([^"]+)" value="([^"]*)"\/>/g)].map((m) => [m[1], m[2]]));
}

describe('inbound_agent_id on phone numbers', () => {
  it('is set on a purchase, and a purchase for another organization\'s agent buys nothing', async () => {
    const { org, agentId } = await organization();
    const other = await organization();
    const number = await boughtNumber(org, { inbound_agent_id: agentId });
    expect(number.inbound_agent_id).toBe(agentId);
    const refused = await rejection(boughtNumber(org, { inbound_agent_id: other.agentId }));
    expect(refused).toBeInstanceOf(ValidationError);
    expect((refused as ValidationError).details).toMatchObject({ fields: [{ path: 'inbound_agent_id' }] });
    expect((await getItem(keys.numberClaim(number.phone_number)))).toMatchObject({ organization_id: org });
  });

  it('is set on an import and on an update of an imported number; null detaches; an unknown agent is a 400 naming the field', async () => {
    const { org, agentId } = await organization();
    const imported = await asFunction('importPhoneNumber', () => importPhoneNumber(org, ImportBody.parse({ phone: freshNumber(), type: 'pstn', inbound_agent_id: agentId })));
    expect(imported.inbound_agent_id).toBe(agentId);
    const unknown = uuidv7();
    const bad = await rejection(asFunction('importPhoneNumber', () => importPhoneNumber(org, ImportBody.parse({ phone: freshNumber(), type: 'pstn', inbound_agent_id: unknown }))));
    expect((bad as ValidationError).details).toMatchObject({ fields: [{ path: 'inbound_agent_id' }] });
    const badUpdate = await rejection(
      asFunction('updateImportedPhoneNumber', () => updateImportedPhoneNumber(org, imported.id, UpdateImportBody.parse({ inbound_agent_id: unknown }))),
    );
    expect((badUpdate as ValidationError).details).toMatchObject({ fields: [{ path: 'inbound_agent_id' }] });
    const cleared = await asFunction('updateImportedPhoneNumber', () => updateImportedPhoneNumber(org, imported.id, UpdateImportBody.parse({ inbound_agent_id: null })));
    expect(cleared.inbound_agent_id).toBeNull();
    const set = await asFunction('updatePhoneNumber', () => updatePhoneNumber(org, imported.id, UpdatePhoneNumberBody.parse({ inbound_agent_id: agentId })));
    expect(set.inbound_agent_id).toBe(agentId);
    expect((await getPhoneNumber(org, imported.id)).inbound_agent_id).toBe(agentId);
  });

  it('points a number bought from Twilio at the incoming-call webhook and at the status webhook (Twilio reports an incoming call\'s end only there)', async () => {
    const carrier = twilioCarrier();
    await carrier.purchase('+14155550100', { voiceUrl: `${PUBLIC}/api/v1/telephony/twilio/inbound`, statusCallbackUrl: `${PUBLIC}/api/v1/telephony/twilio/status` });
    const form = posted.filter((p) => p.path.endsWith('IncomingPhoneNumbers.json')).at(-1)!.form;
    expect(form.get('PhoneNumber')).toBe('+14155550100');
    expect(form.get('VoiceUrl')).toBe(`${PUBLIC}/api/v1/telephony/twilio/inbound`);
    expect(form.get('VoiceMethod')).toBe('POST');
    expect(form.get('StatusCallback')).toBe(`${PUBLIC}/api/v1/telephony/twilio/status`);
    expect(form.get('StatusCallbackMethod')).toBe('POST');
  });
});

describe('the incoming-call webhook', () => {
  it('refuses a request without a valid Twilio signature, and creates nothing', async () => {
    const { org, agentId } = await organization();
    const number = await boughtNumber(org, { inbound_agent_id: agentId });
    const params = { CallSid: 'CA00000000000000000000000000000f01', To: number.phone_number, From: '+14155550177', CallStatus: 'ringing' };
    const forged = await answerIncoming(params, twilioSignature('not the auth token', `${PUBLIC}/api/v1/telephony/twilio/inbound`, params));
    expect(forged.statusCode).toBe(401);
    const missing = await answerIncoming(params, '');
    expect(missing.statusCode).toBe(401);
    expect((await listCalls(org, { limit: 10, offset: 0 } as never)).items).toEqual([]);
  });

  it('rejects a call to a number with no inbound agent, with an inactive agent, or that nobody holds', async () => {
    const { org, agentId } = await organization();
    const number = await boughtNumber(org);
    const call = (to: string) => answerIncoming({ CallSid: `CA${uuidv7().replace(/-/g, '')}`, To: to, From: '+14155550178' });
    for (const to of [number.phone_number, freshNumber()]) {
      const res = await call(to);
      expect(res.statusCode).toBe(200);
      expect(res.headers?.['content-type']).toBe('text/xml');
      expect(res.body).toContain('<Response><Reject/></Response>');
    }
    await asFunction('updatePhoneNumber', () => updatePhoneNumber(org, number.id, UpdatePhoneNumberBody.parse({ inbound_agent_id: agentId })));
    await updateAgent(org, agentId, { status: 'AGENT_STATUS_INACTIVE' } as never);
    expect((await call(number.phone_number)).body).toContain('<Reject/>');
    expect((await listCalls(org, { limit: 10, offset: 0 } as never)).items).toEqual([]);
  });

  it('creates an inbound call session answered by the agent and streams it to the runtime with a stream token', async () => {
    // Prepare
    const { org, agentId } = await organization();
    const number = await boughtNumber(org, { inbound_agent_id: agentId });
    const contact = await createContact(org, { first_name: 'Caller', phone: '+14155550179' } as never);
    const sid = `CA${uuidv7().replace(/-/g, '')}`;
    sent.length = 0;
    // Act
    const res = await answerIncoming({ CallSid: sid, AccountSid: SID, To: number.phone_number, From: '+14155550179', CallStatus: 'ringing', Direction: 'inbound' });
    // Assess: the TwiML
    expect(res.statusCode).toBe(200);
    expect(res.headers?.['content-type']).toBe('text/xml');
    expect(res.body).toContain(`<Connect><Stream url="${RUNTIME}">`);
    const parameters = streamParameters(res.body!);
    expect(parameters).toMatchObject({ organization_id: org, agent_id: agentId, direction: 'inbound' });
    expect(await verifyToken('voice-stream', parameters.token)).toEqual({ organization_id: org, call_id: parameters.call_id, nonce: expect.any(String) });
    // Assess: the call session
    const call = await getCall(org, parameters.call_id!);
    expect(call).toMatchObject({
      direction: 'inbound', status: 'in_progress', agent_id: agentId, from_phone_number: '+14155550179', to_phone_number: number.phone_number, contact_id: contact.id,
    });
    expect(call.answered_at).not.toBeNull();
    const item = (await getItem<CallItem>(keys.call(org, call.id)))!;
    expect(item).toMatchObject({ provider: 'twilio', provider_call_id: sid, price_per_minute: number.per_minute_price_inbound });
    expect(item.due_at).toBeDefined(); // the recovery sweep ends it if the runtime never does
    expect(sent.filter((m) => m.queue === 'event-fanout')).toHaveLength(1); // call.started
    // A repeated webhook for the same carrier call (a retry) answers the same session and makes no second one.
    const again = await answerIncoming({ CallSid: sid, AccountSid: SID, To: number.phone_number, From: '+14155550179', CallStatus: 'ringing', Direction: 'inbound' });
    expect(streamParameters(again.body!).call_id).toBe(call.id);
    expect((await listCalls(org, { limit: 20, offset: 0 } as never)).items.map((c) => c.id)).toEqual([call.id]);
    expect(sent.filter((m) => m.queue === 'event-fanout')).toHaveLength(1);
  });
});

describe('the status webhook', () => {
  const statusEvent = (query: Record<string, string>, params: Record<string, string>) => {
    const path = '/api/v1/telephony/twilio/status';
    const qs = new URLSearchParams(query).toString();
    return apiEvent({
      method: 'POST', path, query,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}${path}${qs ? `?${qs}` : ''}`, params) },
      body: new URLSearchParams(params).toString(),
    });
  };
  const status = (query: Record<string, string>, params: Record<string, string>) => asFunction('receiveTwilioStatus', () => twilioStatus(statusEvent(query, params), lambdaContext));

  it('queues a number\'s status callback (no call in the URL) by its CallSid, and the call-events job ends that inbound call with the carrier\'s duration', async () => {
    const { org, agentId } = await organization();
    const number = await boughtNumber(org, { inbound_agent_id: agentId });
    const sid = `CA${uuidv7().replace(/-/g, '')}`;
    const answered = await answerIncoming({ CallSid: sid, To: number.phone_number, From: '+14155550183', Direction: 'inbound' });
    const callId = streamParameters(answered.body!).call_id!;
    sent.length = 0;
    const res = await status({}, { CallSid: sid, CallStatus: 'completed', CallDuration: '95', Direction: 'inbound', To: number.phone_number, From: '+14155550183' });
    expect(res.statusCode).toBe(200);
    const message = sent.find((m) => m.queue === 'call-events')!.body;
    expect(message).toMatchObject({ kind: 'inbound-status', provider: 'twilio', event: { providerCallId: sid, status: 'completed', durationSec: 95 } });
    await handleCallEventMessage(message);
    expect(await getCall(org, callId)).toMatchObject({ status: 'ended', disconnection_reason: 'completed', duration_sec: 95 });
    // A callback for a call refused before any session (<Reject/>) changes nothing.
    await expect(handleCallEventMessage({ kind: 'inbound-status', provider: 'twilio', event: { providerCallId: 'CA-unknown', status: 'busy', at: new Date().toISOString() } })).resolves.toBeUndefined();
  });

  it('is a 400 naming the missing field when the URL names half a call', async () => {
    const res = await status({ organization_id: uuidv7() }, { CallSid: 'CA1', CallStatus: 'completed' });
    expect(res.statusCode).toBe(400);
    expect(JSON.parse(res.body!).error.details).toMatchObject({ fields: [{ path: 'call_id' }] });
  });
});

describe('the outbound call instructions', () => {
  const twiml = (org: string, callId: string, params: Record<string, string>) => {
    const query = new URLSearchParams({ organization_id: org, call_id: callId });
    const path = '/api/v1/telephony/twilio/twiml';
    const event = apiEvent({
      method: 'POST', path, query: Object.fromEntries(query),
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(TOKEN, `${PUBLIC}${path}?${query}`, params) },
      body: new URLSearchParams(params).toString(),
    });
    return asFunction('getTwilioCallInstructions', () => twilioTwiml(event, lambdaContext));
  };

  it('carry a stream token for the call, and AnsweredBy from machine detection', async () => {
    const { org, agentId } = await organization();
    const number = await boughtNumber(org);
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: number.phone_number, to_phone_number: '+14155550181' }));
    const res = await twiml(org, call.id, { CallSid: 'CA3', AnsweredBy: 'machine_end_beep' });
    const parameters = streamParameters(res.body!);
    expect(parameters).toMatchObject({ call_id: call.id, organization_id: org, agent_id: agentId, direction: 'outbound', answered_by: 'machine_end_beep' });
    expect(await verifyToken('voice-stream', parameters.token)).toEqual({ organization_id: org, call_id: call.id, nonce: expect.any(String) });
    expect(await verifyToken('widget-chat', parameters.token)).toBeNull();
  });

  it('place the call with answering-machine detection only when the agent asks for it, and ring for the agent\'s ring duration', async () => {
    const withDetection = await organization({ enable_voicemail_detection: true, voicemail_detection_timeout_ms: 12_000, ring_duration_ms: 25_000 });
    const without = await organization();
    const forms: URLSearchParams[] = [];
    for (const { org, agentId } of [withDetection, without]) {
      const number = await boughtNumber(org);
      const call = await createCall(org, CreateCallBody.parse({ agent_id: agentId, from_phone_number: number.phone_number, to_phone_number: '+14155550182' }));
      await placeQueuedCall(org, call.id);
      forms.push(posted.filter((p) => p.path.endsWith('Calls.json')).at(-1)!.form);
    }
    expect(forms[0].get('MachineDetection')).toBe('DetectMessageEnd');
    expect(forms[0].get('MachineDetectionTimeout')).toBe('12');
    expect(forms[0].get('Timeout')).toBe('25');
    expect(forms[1].get('MachineDetection')).toBeNull();
    expect(forms[1].get('Timeout')).toBe('30');
  });
});

/**
 * Black-box: outbound calls through the local runtime's HTTP API with the simulated carrier.
 * Queue delays run 100 times faster (the test platform's queueTimeScale), so a call's course of
 * carrier events takes milliseconds; the test waits for the call's state, never for a fixed time.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';
import { startWebhookReceiver, verifyDelivery } from '../support/webhook-receiver';
import { until } from '../support/until';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB], env: { SIMULATED_CALL_SECONDS: '3' } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

/** Polls until `done` holds for the call (or 20 s pass, which fails the test). */
async function callWhen(id: string, done: (call: any) => boolean): Promise<any> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await api('GET', `/api/v1/calls/${id}`);
    expect(res.status).toBe(200);
    if (done(res.body.data)) return res.body.data;
    if (Date.now() > deadline) throw new Error(`call ${id} never reached the expected state: ${JSON.stringify(res.body.data)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The WAV header's format and the length of its PCM data, in seconds. */
function wavSeconds(bytes: Buffer): { seconds: number; sampleRate: number; bits: number } {
  expect(bytes.subarray(0, 4).toString('ascii')).toBe('RIFF');
  expect(bytes.subarray(8, 12).toString('ascii')).toBe('WAVE');
  let offset = 12;
  let sampleRate = 0;
  let bits = 0;
  let channels = 0;
  while (offset + 8 <= bytes.length) {
    const id = bytes.subarray(offset, offset + 4).toString('ascii');
    const size = bytes.readUInt32LE(offset + 4);
    if (id === 'fmt ') {
      channels = bytes.readUInt16LE(offset + 10);
      sampleRate = bytes.readUInt32LE(offset + 12);
      bits = bytes.readUInt16LE(offset + 22);
    }
    if (id === 'data') return { seconds: size / (sampleRate * channels * (bits / 8)), sampleRate, bits };
    offset += 8 + size + (size % 2);
  }
  throw new Error('no data chunk');
}

let agentId: string;
let fromNumber: string;
let price: number;

beforeAll(async () => {
  const [choice] = (await api('GET', '/api/v1/phone-numbers/available?area_code=212&limit=1')).body.data;
  const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } });
  expect(bought.status).toBe(200);
  fromNumber = choice.phone_number;
  price = choice.per_minute_price_outbound;
  const agent = await api('POST', '/api/v1/agents', {
    body: { name: 'Caller', begin_message: 'Hi {{first_name}}, this is Ava from {{company}}.', ring_duration_ms: 2000 },
  });
  expect(agent.status).toBe(200);
  agentId = agent.body.data.id;
});

describe('calls', () => {
  it('places an answered call: completed, transcript from the begin message, real audio, analysis, ledger and contact history', async () => {
    // Prepare
    const contact = await api('POST', '/api/v1/contacts', { body: { first_name: 'Dana', phone: '+14155550120' } });
    expect(contact.status).toBe(200);
    // Act
    const created = await api('POST', '/api/v1/calls', {
      body: {
        agent_id: agentId, from_phone_number: fromNumber, to_phone_number: '+1 (415) 555-0120', contact_id: contact.body.data.id,
        metadata: { order: 42 }, dynamic_variables: { first_name: 'Dana', company: 'Acme' },
      },
    });
    // Assess
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({
      status: 'queued', direction: 'outbound', to_phone_number: '+14155550120', from_phone_number: fromNumber, campaign_id: null,
      disconnection_reason: null, transcript: [], recording_url: null, analysis: null, metadata: { order: 42 },
    });
    const id = created.body.data.id;
    const call = await callWhen(id, (c) => c.status === 'ended' && c.analysis !== null);
    expect(call).toMatchObject({ disconnection_reason: 'completed', duration_sec: 3, answered_at: expect.any(String), started_at: expect.any(String), ended_at: expect.any(String) });
    expect(call.transcript[0]).toEqual({ role: 'agent', text: 'Hi Dana, this is Ava from Acme.', time_sec: 0, agent_id: call.agent_id });
    expect(call.transcript.some((t: { role: string }) => t.role === 'user')).toBe(true);
    expect(call.analysis).toMatchObject({ summary: expect.any(String), sentiment: expect.stringMatching(/^(positive|neutral|negative)$/), successful: expect.any(Boolean) });

    const audio = await fetch(call.recording_url);
    expect(audio.status).toBe(200);
    const wav = wavSeconds(Buffer.from(await audio.arrayBuffer()));
    expect(wav).toEqual({ seconds: 3, sampleRate: 8000, bits: 16 });
    expect(new URL(call.recording_url).searchParams.get('X-Amz-Expires')).toBe('900');

    const charges = (await api('GET', '/api/v1/billing/charges?limit=100')).body.data;
    const minutes = charges.filter((c: { resource_id: string }) => c.resource_id === id);
    expect(minutes).toEqual([expect.objectContaining({ reason: 'call_minutes', resource_type: 'call', amount: Math.round(1 * price * 10_000) / 10_000 })]);

    const history = await api('GET', `/api/v1/contacts/${contact.body.data.id}/calls`);
    expect(history.body.data).toEqual([expect.objectContaining({ id, answered: true, duration_sec: 3, status: 'completed' })]);
    expect((await api('GET', `/api/v1/contacts/${contact.body.data.id}/stats`)).body.data).toMatchObject({ total_calls: 1, answered_calls: 1 });
  });

  it.each([
    ['6', 'voicemail'],
    ['7', 'no_answer'],
    ['8', 'busy'],
    ['9', 'failed'],
  ])('a number ending %s ends %s, unanswered: no duration, empty transcript, no recording, no charge', async (digit, reason) => {
    // Act
    const created = await api('POST', '/api/v1/calls', { body: { agent_id: agentId, from_phone_number: fromNumber, to_phone_number: `+1415555012${digit}` } });
    expect(created.status).toBe(200);
    const call = await callWhen(created.body.data.id, (c) => c.status === 'ended');
    // Assess
    expect(call).toMatchObject({ disconnection_reason: reason, duration_sec: 0, answered_at: null, transcript: [], recording_url: null });
    const charges = (await api('GET', '/api/v1/billing/charges?limit=100')).body.data;
    expect(charges.filter((c: { resource_id: string }) => c.resource_id === call.id)).toEqual([]);
  });

  it('answers 422 for a number on the do-not-call list or a contact that opted out, and places nothing', async () => {
    // Prepare
    expect((await api('POST', '/api/v1/dnc', { body: { phone: '+1 415 555 0130', reason: 'asked' } })).status).toBe(200);
    const optedOut = await api('POST', '/api/v1/contacts', { body: { first_name: 'Olly', opt_out: true } });
    const before = (await api('GET', '/api/v1/calls')).body.meta.total;
    // Act
    const listed = await api('POST', '/api/v1/calls', { body: { agent_id: agentId, from_phone_number: fromNumber, to_phone_number: '+14155550130' } });
    const opted = await api('POST', '/api/v1/calls', {
      body: { agent_id: agentId, from_phone_number: fromNumber, to_phone_number: '+14155550131', contact_id: optedOut.body.data.id },
    });
    // Assess
    expect(listed.status).toBe(422);
    expect(listed.body.error).toMatchObject({ code: 'UNPROCESSABLE', details: { reason: 'do_not_call' } });
    expect(opted.status).toBe(422);
    expect(opted.body.error.details.reason).toBe('opt_out');
    expect((await api('GET', '/api/v1/calls')).body.meta.total).toBe(before);
  });

  it('names the offending field: a number the organization does not hold, another organization\'s agent', async () => {
    const otherAgent = (await api('POST', '/api/v1/agents', { key: keyB, body: { name: 'Other' } })).body.data.id;
    const res = await api('POST', '/api/v1/calls', { body: { agent_id: otherAgent, from_phone_number: '+14155550199', to_phone_number: 'not a number' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(['to_phone_number']);
    const refs = await api('POST', '/api/v1/calls', { body: { agent_id: otherAgent, from_phone_number: '+14155550199', to_phone_number: '+14155550120' } });
    expect(refs.status).toBe(400);
    expect(refs.body.error.details.fields.map((f: { path: string }) => f.path).sort()).toEqual(['agent_id', 'from_phone_number']);
  });

  it('lists calls newest first with filters and exact totals; another organization gets 404 and an empty list', async () => {
    // Prepare
    const other = await api('POST', '/api/v1/agents', { body: { name: 'Second' } });
    const mine = await api('POST', '/api/v1/calls', { body: { agent_id: other.body.data.id, from_phone_number: fromNumber, to_phone_number: '+14155550128' } });
    await callWhen(mine.body.data.id, (c) => c.status === 'ended');
    // Act
    const all = await api('GET', '/api/v1/calls?limit=2');
    const byAgent = await api('GET', `/api/v1/calls?agent_id=${other.body.data.id}`);
    const busyEnded = await api('GET', `/api/v1/calls?status=ended&agent_id=${other.body.data.id}`);
    const future = await api('GET', `/api/v1/calls?from=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    const since = await api('GET', `/api/v1/calls?from=${encodeURIComponent(mine.body.data.created_at)}`);
    // Assess
    expect(all.body.error).toBeUndefined();
    expect(all.status).toBe(200);
    expect(all.body.data[0].id).toBe(mine.body.data.id);
    expect(all.body.meta.total).toBe((await api('GET', '/api/v1/calls?limit=100')).body.data.length);
    expect(all.body.meta.next_cursor).toEqual(all.body.meta.total > 2 ? expect.any(String) : null);
    expect(byAgent.body.data.map((c: { id: string }) => c.id)).toEqual([mine.body.data.id]);
    expect(byAgent.body.meta.total).toBe(1);
    expect(busyEnded.body.meta.total).toBe(1);
    expect(future.body).toMatchObject({ data: [], meta: { total: 0 } });
    expect(since.body.data.map((c: { id: string }) => c.id)).toContain(mine.body.data.id);

    const foreign = await api('GET', `/api/v1/calls/${mine.body.data.id}`, { key: keyB });
    expect(foreign.status).toBe(404);
    const foreignList = await api('GET', '/api/v1/calls', { key: keyB });
    expect(foreignList.body.error).toBeUndefined();
    expect(foreignList.body.meta.total).toBe(0);
  });

  it('delivers call.started, call.ended (transcript, recording link) and call.analyzed to a webhook, each signed and verified by standardwebhooks', async () => {
    // Prepare
    const receiver = await startWebhookReceiver();
    try {
      const hook = await api('POST', '/api/v1/webhooks', { body: { url: `${receiver.url}/calls`, events: ['call.started', 'call.ended', 'call.analyzed'] } });
      expect(hook.status).toBe(200);
      // Act
      const created = await api('POST', '/api/v1/calls', { body: { agent_id: agentId, from_phone_number: fromNumber, to_phone_number: '+14155550150', dynamic_variables: { first_name: 'Lee', company: 'Acme' } } });
      expect(created.status).toBe(200);
      const id = created.body.data.id;
      await callWhen(id, (c) => c.status === 'ended' && c.analysis !== null);
      // Delivery is at least once: a delivery may come twice (the same event and webhook-id), so
      // wait for three distinct events rather than three requests.
      const distinct = () => new Set(receiver.received.filter((r) => r.path === '/calls').map((r) => r.headers['webhook-id'])).size;
      await until(async () => distinct(), (n) => n >= 3, 'three distinct call events delivered');
      const deliveries = receiver.received.filter((r) => r.path === '/calls');
      // Assess
      const events = deliveries.map((d) => verifyDelivery(hook.body.data.secret, d) as { id: string; type: string; data: any });
      const byType = Object.fromEntries(events.map((e) => [e.type, e]));
      expect(Object.keys(byType).sort()).toEqual(['call.analyzed', 'call.ended', 'call.started']);
      // One event per type: a repeated delivery carries the same event id, never a second event.
      for (const type of Object.keys(byType)) expect(new Set(events.filter((e) => e.type === type).map((e) => e.id)).size).toBe(1);
      for (const e of events) expect(e.data.id).toBe(id);
      expect(byType['call.started']!.data.status).toBe('in_progress');
      expect(byType['call.ended']!.data).toMatchObject({ status: 'ended', disconnection_reason: 'completed', recording_url: expect.any(String) });
      expect(byType['call.ended']!.data.transcript[0]).toMatchObject({ role: 'agent', text: 'Hi Lee, this is Ava from Acme.' });
      expect(byType['call.analyzed']!.data.analysis).toMatchObject({ sentiment: expect.any(String), successful: expect.any(Boolean) });
      for (const d of deliveries) expect(d.headers['webhook-id']).toBe(events[deliveries.indexOf(d)]!.id);
    } finally {
      await receiver.close();
    }
  });
});

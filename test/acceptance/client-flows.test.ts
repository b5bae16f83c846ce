/**
 * Black-box, through the typed client (client/): one flow per area against the local runtime, so
 * the client, its generated types and the server cannot drift apart. The flows use only the
 * client (no raw fetch); the types of every body and answer come from the generated schema, so a
 * renamed field fails `tsc` and a changed answer fails here.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { ApiError, createClient, verifyWebhook, type PlatformClient } from '../../client/src/index';
import { usePlatform } from '../support/platform';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';
import { until } from '../support/until';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB], env: { SIMULATED_CALL_SECONDS: '1' } });

let api: PlatformClient;
let other: PlatformClient;
let receiver: WebhookReceiver;
beforeAll(async () => {
  api = createClient({ baseUrl: local().url, apiKey: keyA });
  other = createClient({ baseUrl: local().url, apiKey: keyB });
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

/** The ApiError a call rejects with (fails the test when it resolves). */
async function failure(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(() => undefined, (e: unknown) => e);
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

const byId = (id: string) => ({ params: { path: { id } } });

describe('the typed client against the local runtime', () => {
  it('agents: create, get, patch, status, page through a list, delete; another organization gets a typed 404', async () => {
    const created = await api.post('/api/v1/agents', { body: { name: 'Front desk', begin_message: 'Hi!' } });
    expect(created).toMatchObject({ name: 'Front desk', begin_message: 'Hi!', status: expect.any(String) });
    expect(await api.get('/api/v1/agents/{id}', byId(created.id))).toEqual(created);
    const patched = await api.patch('/api/v1/agents/{id}', { ...byId(created.id), body: { voice_id: 'verse' } });
    expect(patched.voice_id).toBe('verse');
    const status = await api.patch('/api/v1/agents/{id}/status', { ...byId(created.id), body: { status: 'AGENT_STATUS_INACTIVE' } });
    expect(status.status).toBe('AGENT_STATUS_INACTIVE');

    for (const name of ['A2', 'A3']) await api.post('/api/v1/agents', { body: { name } });
    const names: string[] = [];
    for await (const agent of api.paginate('/api/v1/agents', { params: { query: { limit: 1 } } })) names.push(agent.name);
    expect(names.sort()).toEqual(['A2', 'A3', 'Front desk']);
    const page = await api.page('/api/v1/agents', { params: { query: { limit: 2 } } });
    expect(page.meta).toMatchObject({ total: 3, limit: 2, next_cursor: expect.any(String) });

    const missing = await failure(other.get('/api/v1/agents/{id}', byId(created.id)));
    expect(missing).toMatchObject({ status: 404, code: 'NOT_FOUND', requestId: expect.any(String) });
    const invalid = await failure(api.post('/api/v1/agents', { body: { name: '' } }));
    expect(invalid).toMatchObject({ status: 400, code: 'VALIDATION_ERROR' });
    expect(invalid.fields.map((f) => f.path)).toContain('name');

    expect(await api.delete('/api/v1/agents/{id}', byId(created.id))).toBeUndefined();
    expect((await failure(api.get('/api/v1/agents/{id}', byId(created.id)))).status).toBe(404);
  });

  it('tools and widget settings: create, attach to an agent, update, list, delete', async () => {
    const tool = await api.post('/api/v1/tools', { body: { name: 'Lookup', definition: { name: 'lookup', description: 'Finds an order' } } });
    const widget = await api.post('/api/v1/widget-settings', { body: { name: 'Site', title: 'Talk to us', allowed_origins: ['https://example.com'] } });
    const agent = await api.post('/api/v1/agents', { body: { name: 'Tooled', selected_tools: [{ tool_id: tool.id }], widget_settings_id: widget.id } });
    expect(agent.selected_tools).toEqual([expect.objectContaining({ tool_id: tool.id })]);
    expect(agent.widget_settings_id).toBe(widget.id);

    expect((await api.patch('/api/v1/tools/{id}', { ...byId(tool.id), body: { description: 'Finds orders' } })).description).toBe('Finds orders');
    expect((await api.patch('/api/v1/widget-settings/{id}', { ...byId(widget.id), body: { title: 'Hello' } })).title).toBe('Hello');
    expect((await api.get('/api/v1/tools')).map((t) => t.id)).toContain(tool.id);
    expect((await api.get('/api/v1/widget-settings')).map((w) => w.id)).toContain(widget.id);
    expect((await api.get('/api/v1/widget/{id}/config', byId(widget.id))).title).toBe('Hello');

    await api.delete('/api/v1/agents/{id}', byId(agent.id));
    await api.delete('/api/v1/tools/{id}', byId(tool.id));
    await api.delete('/api/v1/widget-settings/{id}', byId(widget.id));
    expect((await failure(api.get('/api/v1/tools/{id}', byId(tool.id)))).code).toBe('NOT_FOUND');
  });

  it('api keys: issue one, use it through a second client, list it, revoke it (then 401)', async () => {
    const issued = await api.post('/api/v1/api-keys', { body: { name: 'ci' } });
    const ci = createClient({ baseUrl: local().url, apiKey: issued.key });
    expect(Array.isArray(await ci.get('/api/v1/agents'))).toBe(true);
    expect((await api.get('/api/v1/api-keys')).map((k) => k.id)).toContain(issued.id);
    await api.delete('/api/v1/api-keys/{id}', byId(issued.id));
    expect(await failure(ci.get('/api/v1/agents'))).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
  });

  it('phone numbers and billing: buy a listed number once under an Idempotency-Key, see its charge, release it', async () => {
    const [offer] = await api.get('/api/v1/phone-numbers/available', { params: { query: { country: 'US', area_code: '415', limit: 1 } } });
    const body = { phone_number: offer!.phone_number, price: offer!.price };
    const bought = await api.post('/api/v1/phone-numbers/buy', { body, idempotencyKey: `buy-${offer!.phone_number}` });
    const again = await api.post('/api/v1/phone-numbers/buy', { body, idempotencyKey: `buy-${offer!.phone_number}` });
    expect(again).toEqual(bought);
    expect(bought).toMatchObject({ phone_number: offer!.phone_number, status: 'active' });
    expect((await failure(api.post('/api/v1/phone-numbers/buy', { body }))).status).toBe(422);

    const charges = await api.page('/api/v1/billing/charges');
    expect(charges.meta.total).toBe(1);
    expect(charges.data[0]).toMatchObject({ reason: 'number_purchase', amount: offer!.price, resource_id: bought.id });
    const imported = await api.post('/api/v1/phone-numbers/import', { body: { phone: '+16175550150', type: 'pstn' } });
    expect((await api.get('/api/v1/phone-numbers')).map((n) => n.id).sort()).toEqual([bought.id, imported.id].sort());
    await api.delete('/api/v1/phone-numbers/{id}', byId(bought.id));
    await api.delete('/api/v1/phone-numbers/{id}', byId(imported.id));
  });

  it('contacts and do-not-call: create, search, note, timeline, paginate; a DNC entry added, listed, removed', async () => {
    const ada = await api.post('/api/v1/contacts', { body: { first_name: 'Ada', last_name: 'Lovelace', phone: '+1 415 555 0100', tags: ['vip'] } });
    expect(ada.phone).toBe('+14155550100');
    await api.post('/api/v1/contacts', { body: { first_name: 'Grace', phone: '+14155550101' } });
    expect((await api.get('/api/v1/contacts/search', { params: { query: { q: 'lov' } } })).map((c) => c.id)).toEqual([ada.id]);
    await api.post('/api/v1/contacts/{id}/notes', { ...byId(ada.id), body: { content: 'Prefers mornings' } });
    expect((await api.get('/api/v1/contacts/{id}/activities', byId(ada.id))).map((a) => a.type)).toContain('note');
    expect((await api.patch('/api/v1/contacts/{id}', { ...byId(ada.id), body: { company: 'Analytical' } })).company).toBe('Analytical');
    const all = [];
    for await (const contact of api.paginate('/api/v1/contacts', { params: { query: { limit: 1 } } })) all.push(contact.id);
    expect(all).toHaveLength(2);

    const entry = await api.post('/api/v1/dnc', { body: { phone: '+1 (415) 555-0101', reason: 'asked' } });
    expect(entry.phone).toBe('+14155550101');
    expect((await api.get('/api/v1/dnc')).map((e) => e.phone)).toContain('+14155550101');
    await api.delete('/api/v1/dnc/{phone}', { params: { path: { phone: '+14155550101' } } });
    expect((await api.get('/api/v1/dnc')).map((e) => e.phone)).not.toContain('+14155550101');
  });

  it('appointments: availability, book, reschedule, cancel', async () => {
    const agent = await api.post('/api/v1/agents', { body: { name: 'Scheduler' } });
    const availability = await api.get('/api/v1/scheduler/availability', {
      params: { query: { agent_id: agent.id, start: '2031-06-02', end: '2031-06-02', duration_minutes: 30, timezone: 'UTC' } },
    });
    const slot = availability.slots[0]!;
    const booked = await api.post('/api/v1/scheduler/appointments', { body: { agent_id: agent.id, start_time: slot.start, duration_minutes: 30, attendee_name: 'Ada' } });
    expect(booked.status).toBe('accepted');
    const moved = await api.post('/api/v1/scheduler/appointments/{id}/reschedule', { ...byId(booked.id), body: { start_time: '2031-06-02T10:00:00Z' } });
    expect(moved.rescheduled_from).toBe(booked.id);
    const cancelled = await api.post('/api/v1/scheduler/appointments/{id}/cancel', { ...byId(moved.id), body: { reason: 'Travelling' } });
    expect(cancelled).toMatchObject({ status: 'cancelled', cancellation_reason: 'Travelling' });
    expect((await failure(api.post('/api/v1/scheduler/appointments/{id}/cancel', { ...byId(moved.id), body: {} }))).code).toBe('CONFLICT');
  });

  // Not deleted here: the kb-cleanup message is sent before the knowledge base's item is deleted, and
  // under load the job can run in between and fail once on purpose (retried later), which the
  // test platform would report as an undeclared failure (test/acceptance/rag.test.ts covers deletion).
  it('knowledge base: create, ingest text, query it, list documents, read it back with its count', async () => {
    const kb = await api.post('/api/v1/rag/knowledge-bases', { body: { name: 'FAQ' } });
    const ingested = await api.post('/api/v1/rag/ingest', { body: { kb_id: kb.id, text: 'Parking is free for customers behind the store.' } });
    expect(ingested.documents).toHaveLength(1);
    const answer = await until(
      () => api.post('/api/v1/rag/query', { body: { kb_id: kb.id, query: 'parking' } }),
      (r) => r.passages.length > 0,
      'the document being indexed',
    );
    expect(answer.passages[0]!.text).toMatch(/Parking is free/);
    expect((await api.page('/api/v1/rag/documents', { params: { query: { kb_id: kb.id } } })).meta.total).toBe(1);
    expect(await api.get('/api/v1/rag/knowledge-bases/{kb_id}', { params: { path: { kb_id: kb.id } } })).toMatchObject({ id: kb.id, name: 'FAQ', document_count: 1 });
  });

  it('webhooks and events: an endpoint receives a signed ping that verifyWebhook accepts; the event is listed', async () => {
    const endpoint = await api.post('/api/v1/webhooks', { body: { url: `${receiver.url}/client`, events: ['*'] } });
    const attempt = await api.post('/api/v1/webhooks/{id}/test', byId(endpoint.id));
    expect(attempt).toMatchObject({ succeeded: true, trigger: 'test' });
    const [delivery] = await receiver.waitFor(1, (r) => r.path === '/client');
    const event = verifyWebhook(delivery!.body, delivery!.headers, endpoint.secret);
    expect(event.type).toBe('ping');
    expect(await api.get('/api/v1/events/{id}', byId(event.id))).toMatchObject({ id: event.id, type: 'ping' });
    expect((await api.get('/api/v1/webhooks/{id}/deliveries', byId(endpoint.id))).map((d) => d.event_id)).toContain(event.id);
    const rotated = await api.post('/api/v1/webhooks/{id}/rotate-secret', byId(endpoint.id));
    expect(rotated.secret).not.toBe(endpoint.secret);
    await api.delete('/api/v1/webhooks/{id}', byId(endpoint.id));
  });

  it('calls and campaigns: a call ends with its transcript; a campaign dials its contacts to completion', async () => {
    const [offer] = await api.get('/api/v1/phone-numbers/available', { params: { query: { area_code: '212', limit: 1 } } });
    const number = await api.post('/api/v1/phone-numbers/buy', { body: { phone_number: offer!.phone_number, price: offer!.price } });
    const agent = await api.post('/api/v1/agents', { body: { name: 'Dialer', begin_message: 'Hi {{first_name}}!', ring_duration_ms: 2000 } });

    const call = await api.post('/api/v1/calls', { body: { agent_id: agent.id, from_phone_number: number.phone_number, to_phone_number: '+14155550130', dynamic_variables: { first_name: 'Lee' } } });
    const ended = await until(() => api.get('/api/v1/calls/{id}', byId(call.id)), (c) => c.status === 'ended', 'the call ending');
    expect(ended).toMatchObject({ disconnection_reason: 'completed' });
    expect(ended.transcript[0]).toMatchObject({ role: 'agent', text: 'Hi Lee!' });

    const contacts = [];
    for (const phone of ['+14155550210', '+14155550220']) contacts.push(await api.post('/api/v1/contacts', { body: { first_name: 'C', phone } }));
    const campaign = await api.post('/api/v1/campaigns', {
      body: {
        name: 'Always open', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone_number, contact_ids: contacts.map((c) => c.id),
        schedule: { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: 2 },
      },
    });
    expect((await api.post('/api/v1/campaigns/{id}/start', byId(campaign.id))).status).toBe('running');
    const done = await until(() => api.get('/api/v1/campaigns/{id}', byId(campaign.id)), (c) => c.status === 'completed', 'the campaign completing');
    expect(done.contact_stats).toMatchObject({ total: 2, successful: 2, pending: 0, in_progress: 0 });
    expect((await api.page('/api/v1/calls', { params: { query: { campaign_id: campaign.id } } })).meta.total).toBe(2);
  });
});

/**
 * Black-box, with the default local analyzer: an agent's `analysis_fields` and `success_criteria`
 * (each bad field a 400 naming its path), a chat analysed with every field null and `custom`
 * saying why, `POST /chats/{id}/analysis` (409 while open, 404 for another organization's, a
 * second `chat.analyzed` whose webhook payload carries `data` and `success_rationale`), and
 * `GET /analytics/conversations` with its validation.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const FIELDS = [
  { name: 'outcome', type: 'enum', description: 'What the person decided', options: ['booked', 'declined'] },
  { name: 'wants_callback', type: 'boolean', description: 'Whether they asked to be called back' },
  { name: 'party_size', type: 'integer', description: 'How many people' },
];
const today = () => new Date().toISOString().slice(0, 10);
const paths = (res: { body: any }) => res.body.error.details.fields.map((f: { path: string }) => f.path);

let receiver: WebhookReceiver;
beforeAll(async () => {
  receiver = await startWebhookReceiver();
});
afterAll(() => receiver.close());

describe('analysis fields on agents', () => {
  it.each([
    [[...FIELDS, { name: 'size', type: 'enum', description: 'Size', options: ['s'] }], 'analysis_fields.3.options'],
    [[{ name: 'Outcome', type: 'string', description: 'x' }], 'analysis_fields.0.name'],
    [[{ name: 'a', type: 'date', description: 'x' }], 'analysis_fields.0.type'],
    [[{ name: 'a', type: 'string', description: '' }], 'analysis_fields.0.description'],
    [[{ name: 'a', type: 'boolean', description: 'x', options: ['y', 'n'] }], 'analysis_fields.0.options'],
    [[{ name: 'a', type: 'enum', description: 'x', options: ['y', 'y'] }], 'analysis_fields.0.options.1'],
    [[FIELDS[1], { ...FIELDS[1] }], 'analysis_fields.1.name'],
    [Array.from({ length: 26 }, (_, i) => ({ name: `f${i}`, type: 'string', description: 'x' })), 'analysis_fields'],
    [[{ name: 'a', type: 'string', description: 'x', extra: 1 }], 'analysis_fields.0'],
  ] as [unknown[], string][])('refuses bad fields (case %#) on create and PATCH, naming the path', async (fields, path) => {
    const create = await api('POST', '/api/v1/agents', { body: { name: 'Bad', analysis_fields: fields } });
    expect(create.status).toBe(400);
    expect(paths(create).some((p: string) => p === path || p.startsWith(`${path}.`))).toBe(true);
    const agent = await api('POST', '/api/v1/agents', { body: { name: 'Good' } });
    const patch = await api('PATCH', `/api/v1/agents/${agent.body.data.id}`, { body: { analysis_fields: fields } });
    expect(patch.status).toBe(400);
    expect(paths(patch).some((p: string) => p === path || p.startsWith(`${path}.`))).toBe(true);
  });

  it('keeps valid fields and success criteria on create and PATCH; an agent without them shows the defaults', async () => {
    const plain = await api('POST', '/api/v1/agents', { body: { name: 'Plain' } });
    expect(plain.body.data).toMatchObject({ analysis_fields: [], success_criteria: '' });
    const patched = await api('PATCH', `/api/v1/agents/${plain.body.data.id}`, { body: { analysis_fields: FIELDS, success_criteria: 'A table is booked.' } });
    expect(patched.status).toBe(200);
    expect(patched.body.data).toMatchObject({ analysis_fields: FIELDS, success_criteria: 'A table is booked.' });
  });
});

describe('typed outcomes with the local analyzer, re-analysis and analytics', () => {
  it('leaves every field null and says so; runs the analysis again; counts it once in the analytics', async () => {
    const hook = await api('POST', '/api/v1/webhooks', { body: { url: `${receiver.url}/chats`, events: ['chat.analyzed'] } });
    expect(hook.status).toBe(200);
    const agent = await api('POST', '/api/v1/agents', { body: { name: 'Bookings', analysis_fields: FIELDS, success_criteria: 'A table is booked.' } });
    const agentId = agent.body.data.id;
    const chat = (await api('POST', '/api/v1/chats', { body: { agent_id: agentId } })).body.data;

    // Not ended: 409; another organization's: 404.
    const early = await api('POST', `/api/v1/chats/${chat.id}/analysis`);
    expect(early.status).toBe(409);
    expect(early.body.error.code).toBe('CONFLICT');
    expect((await api('POST', `/api/v1/chats/${chat.id}/analysis`, { key: keyB })).status).toBe(404);

    expect((await api('POST', `/api/v1/chats/${chat.id}/messages`, { body: { content: 'A table for four on Friday, please. Thanks, lovely!' } })).status).toBe(200);
    expect((await api('POST', `/api/v1/chats/${chat.id}/end`)).status).toBe(200);
    const analysed = await until(() => api('GET', `/api/v1/chats/${chat.id}`), (r) => r.body.data.analysis !== null, 'chat analysis');
    const analysis = analysed.body.data.analysis;
    expect(analysis.data).toEqual({ outcome: null, wants_callback: null, party_size: null });
    expect(analysis.data_types).toEqual({ outcome: 'enum', wants_callback: 'boolean', party_size: 'integer' });
    expect(analysis.data_errors).toEqual([]);
    expect(analysis.custom.data_not_evaluated).toMatch(/local analyzer.*3 analysis fields are left null/);
    expect(analysis.custom.success_criteria_ignored).toMatch(/success_criteria/);
    expect(analysis.success_rationale).toMatch(/local rule/);

    const first = await receiver.waitFor(1, (r) => r.path === '/chats');
    expect(JSON.parse(first[0]!.body).data.analysis).toMatchObject({ data: { outcome: null }, success_rationale: expect.any(String) });

    const again = await api('POST', `/api/v1/chats/${chat.id}/analysis`);
    expect(again.status).toBe(200);
    expect(again.body.data.analysis).toMatchObject({ data: { outcome: null, wants_callback: null, party_size: null }, success_rationale: expect.any(String) });
    expect(again.body.data.messages.length).toBeGreaterThan(0);
    const both = await receiver.waitFor(2, (r) => r.path === '/chats');
    const payload = JSON.parse(both[1]!.body);
    expect(payload.type).toBe('chat.analyzed');
    expect(payload.data.analysis).toMatchObject({ data: { outcome: null, wants_callback: null, party_size: null }, success_rationale: expect.any(String) });

    const stats = await api('GET', `/api/v1/analytics/conversations?from=${today()}&to=${today()}&agent_id=${agentId}`);
    expect(stats.status).toBe(200);
    const expected = { calls: 0, chats: 1, ended: { user_ended: 1 }, analyzed: 1, fields: {} };
    expect(stats.body.data.intervals).toEqual([expect.objectContaining({ start: today(), end: today(), ...expected })]);
    expect(stats.body.data.totals).toMatchObject(expected);
    expect(stats.body.data.totals.prompt_tokens).toBeGreaterThanOrEqual(0);
    // The other organization sees none of it; a call-only read neither.
    expect((await api('GET', `/api/v1/analytics/conversations?from=${today()}&to=${today()}`, { key: keyB })).body.data.totals.chats).toBe(0);
    expect((await api('GET', `/api/v1/analytics/conversations?from=${today()}&to=${today()}&channel=call`)).body.data.totals.chats).toBe(0);
  });

  it.each([
    ['from=2026-13-01&to=2026-12-01', 'from'],
    ['from=yesterday&to=2026-12-01', 'from'],
    ['from=2026-12-02&to=2026-12-01', 'to'],
    ['from=2025-01-01&to=2026-01-02', 'to'],
    ['to=2026-12-01', 'from'],
    ['from=2026-12-01&to=2026-12-01&interval=month', 'interval'],
    ['from=2026-12-01&to=2026-12-01&channel=sms', 'channel'],
    ['from=2026-12-01&to=2026-12-01&agent_id=nope', 'agent_id'],
  ])('GET /analytics/conversations?%s is a 400 naming %s', async (query, field) => {
    const res = await api('GET', `/api/v1/analytics/conversations?${query}`);
    expect(res.status).toBe(400);
    expect(paths(res)).toContain(field);
  });

  it('reads a 366-day window by weeks', async () => {
    const res = await api('GET', '/api/v1/analytics/conversations?from=2025-01-01&to=2026-01-01&interval=week');
    expect(res.status).toBe(200);
    expect(res.body.data.intervals[0]).toMatchObject({ start: '2025-01-01', end: '2025-01-05' });
    expect(res.body.data.intervals.at(-1)).toMatchObject({ start: '2025-12-29', end: '2026-01-01' });
  });
});

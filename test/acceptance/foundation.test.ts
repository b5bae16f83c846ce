/**
 * Black-box: the local runtime over real HTTP. Two organizations, each with its own key.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

describe('health and the contract', () => {
  it('answers liveness and readiness without a key', async () => {
    const live = await api('GET', '/api/v1/health', { key: null });
    const ready = await api('GET', '/api/v1/health/ready/', { key: null });
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ success: true, data: { status: 'ok', version: expect.any(String) } });
    expect(ready.body.data).toEqual({ status: 'ready', checks: { table: 'ok', bucket: 'ok' } });
    expect(live.headers.get('x-request-id')).toBeTruthy();
  });

  it('serves the OpenAPI document without a key', async () => {
    const res = await api('GET', '/api/v1/openapi.json', { key: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.paths['/api/v1/agents/{id}'].patch.operationId).toBe('updateAgent');
  });

  it('answers unknown routes with 404 and wrong methods with 405 envelopes', async () => {
    const unknown = await api('GET', '/api/v1/nothing-here');
    const wrong = await api('PUT', '/api/v1/agents');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ success: false, error: { code: 'NOT_FOUND' } });
    expect(wrong.status).toBe(405);
    expect(wrong.body.error.code).toBe('METHOD_NOT_ALLOWED');
    expect(wrong.headers.get('allow')).toContain('GET');
  });
});

describe('authentication', () => {
  it.each([
    ['no key', null],
    ['a malformed key', 'nope'],
    ['an unknown key', generateApiKey()],
  ])('refuses %s with 401', async (_name, key) => {
    const res = await api('GET', '/api/v1/agents', { key });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ success: false, error: { code: 'UNAUTHORIZED' } });
  });

  it('issues, lists and revokes keys; a revoked key answers 401 at once', async () => {
    const issued = await api('POST', '/api/v1/api-keys', { body: { name: 'ci' } });
    expect(issued.status).toBe(200);
    expect(issued.body.data.key).toMatch(/^vap_/);
    const newKey = issued.body.data.key as string;
    expect((await api('GET', '/api/v1/agents', { key: newKey })).status).toBe(200);

    const listed = await api('GET', '/api/v1/api-keys');
    expect(listed.body.meta.total).toBe(listed.body.data.length);
    expect(JSON.stringify(listed.body)).not.toContain(newKey.slice(13));
    expect(listed.body.data.map((k: any) => k.id)).toContain(issued.body.data.id);

    const revoked = await api('DELETE', `/api/v1/api-keys/${issued.body.data.id}`);
    expect(revoked.body).toEqual({ success: true, message: 'API key revoked' });
    expect((await api('GET', '/api/v1/agents', { key: newKey })).status).toBe(401);
    expect((await api('DELETE', `/api/v1/api-keys/${issued.body.data.id}`)).status).toBe(404);
  });

  it('records when a key was last used, through the queue', async () => {
    const issued = await api('POST', '/api/v1/api-keys', { body: { name: 'usage' } });
    await api('GET', '/api/v1/agents', { key: issued.body.data.key });
    await local().platform.queue.waitForIdle(10_000);
    const listed = await api('GET', '/api/v1/api-keys?limit=100');
    const mine = listed.body.data.find((k: any) => k.id === issued.body.data.id);
    expect(mine.last_used_at).toEqual(expect.stringMatching(/^\d{4}-/));
  });
});

describe('rate limits', () => {
  it('answers 429 with Retry-After once a key is past its organization\'s rate', async () => {
    const { createOrganizationWithKey } = await import('../../shared/domain/api-keys/provision');
    const { key } = await createOrganizationWithKey({ name: 'limited', rateLimitPerMinute: 3 });
    const replies = [];
    for (let i = 0; i < 4; i++) replies.push(await api('GET', '/api/v1/agents', { key }));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(replies.map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0', '0']);
    expect(replies[3].headers.get('x-ratelimit-limit')).toBe('3');
    expect(Number(replies[3].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(replies[3].body.error.code).toBe('RATE_LIMITED');
    // Another key is not affected.
    expect((await api('GET', '/api/v1/agents')).status).toBe(200);
  });
});

describe('agents', () => {
  it('creates with defaults, reads, lists, patches and deletes', async () => {
    const created = await api('POST', '/api/v1/agents/', { body: { name: 'Front desk', begin_message: 'Hello!' } });
    expect(created.status).toBe(200);
    const agent = created.body.data;
    expect(agent).toMatchObject({ name: 'Front desk', agent_name: 'Front desk', status: 'AGENT_STATUS_ACTIVE', begin_message: 'Hello!', selected_tools: [], start_speaker: 'agent' });
    expect(agent.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(agent).not.toHaveProperty('pk');
    expect(agent).not.toHaveProperty('version');

    expect((await api('GET', `/api/v1/agents/${agent.id}`)).body.data).toEqual(agent);
    const patched = await api('PATCH', `/api/v1/agents/${agent.id}/`, { body: { temperature: 1.2, voice_id: 'alloy' } });
    expect(patched.body.data).toMatchObject({ temperature: 1.2, voice_id: 'alloy', name: 'Front desk', begin_message: 'Hello!' });

    const status = await api('PATCH', `/api/v1/agents/${agent.id}/status`, { body: { status: 'AGENT_STATUS_INACTIVE' } });
    expect(status.body.data.status).toBe('AGENT_STATUS_INACTIVE');
    const inactive = await api('GET', '/api/v1/agents?status=AGENT_STATUS_INACTIVE');
    expect(inactive.body.data.map((a: any) => a.id)).toContain(agent.id);
    expect(inactive.body.meta.total).toBe(inactive.body.data.length);

    const deleted = await api('DELETE', `/api/v1/agents/${agent.id}`);
    expect(deleted.body).toEqual({ success: true, message: 'Agent deleted successfully' });
    expect((await api('GET', `/api/v1/agents/${agent.id}`)).status).toBe(404);
  });

  it('pages with offset and cursor, with an exact total', async () => {
    const key = (await api('POST', '/api/v1/api-keys', { body: { name: 'paging' } })).body.data.key;
    // A fresh key shares the organization, so count what is there first.
    const before = (await api('GET', '/api/v1/agents', { key })).body.meta.total as number;
    for (let i = 0; i < 5; i++) await api('POST', '/api/v1/agents', { key, body: { name: `paged ${i}` } });
    const first = await api('GET', '/api/v1/agents?limit=2', { key });
    expect(first.body.meta).toMatchObject({ total: before + 5, limit: 2, offset: 0 });
    const second = await api('GET', `/api/v1/agents?limit=2&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`, { key });
    const byOffset = await api('GET', '/api/v1/agents?limit=2&offset=2', { key });
    expect(second.body.data.map((a: any) => a.id)).toEqual(byOffset.body.data.map((a: any) => a.id));
    expect(second.body.data[0].id).not.toBe(first.body.data[0].id);
    const beyond = await api('GET', `/api/v1/agents?offset=${before + 5}`, { key });
    expect(beyond.body.data).toEqual([]);
    expect(beyond.body.meta.next_cursor).toBeNull();
  });

  it.each([
    ['a limit above 100', 'GET', '/api/v1/agents?limit=101', undefined, 'limit'],
    ['an unknown query parameter', 'GET', '/api/v1/agents?color=red', undefined, 'color'],
    ['a path id that is not a UUID', 'GET', '/api/v1/agents/not-a-uuid', undefined, 'id'],
    ['a missing name', 'POST', '/api/v1/agents', { voice_id: 'x' }, 'name'],
    ['an unknown field', 'POST', '/api/v1/agents', { name: 'x', colour: 'red' }, 'colour'],
    ['a temperature out of range', 'POST', '/api/v1/agents', { name: 'x', temperature: 3 }, 'temperature'],
    ['a bad status', 'PATCH', '/api/v1/agents/0190aaaa-0000-7000-8000-000000000000/status', { status: 'ON' }, 'status'],
    ['a reference to a missing tool', 'POST', '/api/v1/agents', { name: 'x', selected_tools: [{ tool_id: '0190aaaa-0000-7000-8000-000000000000' }] }, 'selected_tools.0.tool_id'],
    ['a reference to missing widget settings', 'POST', '/api/v1/agents', { name: 'x', widget_settings_id: '0190aaaa-0000-7000-8000-000000000000' }, 'widget_settings_id'],
    ['a reference to a missing knowledge base', 'POST', '/api/v1/agents', { name: 'x', knowledge_base: 'kb-1' }, 'knowledge_base'],
    ['a bad cursor', 'GET', '/api/v1/agents?cursor=abc', undefined, 'cursor'],
  ])('answers 400 naming the field for %s', async (_name, method, path, body, field) => {
    const res = await api(method, path, { body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(field);
  });

  it('answers 400 for malformed JSON and a wrong content type, 413 for a huge body', async () => {
    const malformed = await api('POST', '/api/v1/agents', { body: '{"name":', headers: { 'content-type': 'application/json' } });
    const wrongType = await api('POST', '/api/v1/agents', { body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const huge = await api('POST', '/api/v1/agents', { body: { name: 'x', begin_message: 'y'.repeat(1_100_000) } });
    expect([malformed.status, wrongType.status, huge.status]).toEqual([400, 400, 413]);
    expect(huge.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('keeps 30 concurrent PATCHes of one agent consistent', async () => {
    const { id } = (await api('POST', '/api/v1/agents', { body: { name: 'contended' } })).body.data;
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        api('PATCH', `/api/v1/agents/${id}`, { body: i % 3 === 0 ? { status: i % 2 ? 'AGENT_STATUS_ACTIVE' : 'AGENT_STATUS_INACTIVE', begin_message: `m${i}` } : { begin_message: `m${i}`, voice_id: `v${i}` } }),
      ),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(30).fill(200));
    const final = (await api('GET', `/api/v1/agents/${id}`)).body.data;
    expect(final.begin_message).toMatch(/^m\d+$/);
    expect(final.name).toBe('contended');
    // The per-status counters moved with every status change: the filtered totals still add up.
    const active = await api('GET', '/api/v1/agents?status=AGENT_STATUS_ACTIVE&limit=100');
    const inactive = await api('GET', '/api/v1/agents?status=AGENT_STATUS_INACTIVE&limit=100');
    const all = await api('GET', '/api/v1/agents?limit=1');
    expect(active.body.meta.total).toBe(active.body.data.length);
    expect(inactive.body.meta.total).toBe(inactive.body.data.length);
    expect(active.body.meta.total + inactive.body.meta.total).toBe(all.body.meta.total);
    expect(active.body.data.concat(inactive.body.data).filter((a: any) => a.id === id)).toHaveLength(1);
  });
});

describe('tenant isolation', () => {
  it('never shows or changes another organization\'s data', async () => {
    const mine = (await api('POST', '/api/v1/agents', { key: keyA, body: { name: 'org A only' } })).body.data;
    const tool = (await api('POST', '/api/v1/tools', { key: keyA, body: { name: 'lookup', definition: { name: 'lookup', description: 'd', parameters: { type: 'object', properties: {}, required: [] } } } })).body.data;
    expect((await api('GET', `/api/v1/agents/${mine.id}`, { key: keyB })).status).toBe(404);
    expect((await api('PATCH', `/api/v1/agents/${mine.id}`, { key: keyB, body: { name: 'hijack' } })).status).toBe(404);
    expect((await api('DELETE', `/api/v1/agents/${mine.id}`, { key: keyB })).status).toBe(404);
    expect((await api('GET', `/api/v1/tools/${tool.id}`, { key: keyB })).status).toBe(404);
    const listB = await api('GET', '/api/v1/agents?limit=100', { key: keyB });
    expect(listB.body.data.map((a: any) => a.id)).not.toContain(mine.id);
    // Org B cannot point its agent at org A's tool.
    const crossRef = await api('POST', '/api/v1/agents', { key: keyB, body: { name: 'x', selected_tools: [{ tool_id: tool.id }] } });
    expect(crossRef.status).toBe(400);
    // A cursor from org A's list is refused for org B.
    const pageA = await api('GET', '/api/v1/agents?limit=1', { key: keyA });
    if (pageA.body.meta.next_cursor) {
      const reuse = await api('GET', `/api/v1/agents?cursor=${encodeURIComponent(pageA.body.meta.next_cursor)}`, { key: keyB });
      expect(reuse.status).toBe(400);
    }
    expect((await api('GET', `/api/v1/agents/${mine.id}`, { key: keyA })).body.data.name).toBe('org A only');
  });
});

describe('idempotency', () => {
  it('replays the first answer, refuses another body with 409, and creates once', async () => {
    const headers = { 'idempotency-key': `idem-${Date.now()}` };
    const first = await api('POST', '/api/v1/agents', { headers, body: { name: 'once' } });
    const again = await api('POST', '/api/v1/agents', { headers, body: { name: 'once' } });
    const other = await api('POST', '/api/v1/agents', { headers, body: { name: 'twice' } });
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(other.status).toBe(409);
    const list = await api('GET', '/api/v1/agents?limit=100');
    expect(list.body.data.filter((a: any) => a.name === 'once')).toHaveLength(1);
  });

  it('lets a failed request be retried with the same key', async () => {
    const headers = { 'idempotency-key': `retry-${Date.now()}` };
    const bad = await api('POST', '/api/v1/agents', { headers, body: { name: 'x', widget_settings_id: '0190aaaa-0000-7000-8000-000000000000' } });
    expect(bad.status).toBe(400);
    const again = await api('POST', '/api/v1/agents', { headers, body: { name: 'x', widget_settings_id: '0190aaaa-0000-7000-8000-000000000000' } });
    expect(again.status).toBe(400);
    expect(again.headers.get('idempotent-replayed')).toBeNull();
  });
});

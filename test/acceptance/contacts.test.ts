/**
 * Black-box: contacts over real HTTP against the local runtime. Two organizations.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);
const unique = () => Math.random().toString(36).slice(2, 8);

describe('contacts', () => {
  it('creates with every field optional, normalizes phone and email, reads, patches and deletes', async () => {
    const empty = await api('POST', '/api/v1/contacts/', { body: {} });
    expect(empty.status).toBe(200);
    expect(empty.body.data).toMatchObject({ first_name: '', email: '', phone: '', metadata: {}, tags: [], opt_out: false, timezone: '' });

    const created = await api('POST', '/api/v1/contacts', {
      body: { first_name: 'Ada', last_name: 'Lovelace', email: ' Ada@Example.COM ', phone: '+1 (415) 555-0123', company: 'Analytical', metadata: { tier: 'gold' }, timezone: 'Europe/London', opt_out: false, tags: ['vip'] },
    });
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({ email: 'ada@example.com', phone: '+14155550123', timezone: 'Europe/London', tags: ['vip'] });
    const id = created.body.data.id;
    expect((await api('GET', `/api/v1/contacts/${id}`)).body.data).toEqual(created.body.data);

    const patched = await api('PATCH', `/api/v1/contacts/${id}`, { body: { company: 'Babbage & Co', phone: '' } });
    expect(patched.body.data).toMatchObject({ company: 'Babbage & Co', phone: '', first_name: 'Ada' });

    const listed = await api('GET', '/api/v1/contacts?limit=100');
    expect(listed.body.meta.total).toBe(listed.body.data.length);
    expect(listed.body.data.map((c: any) => c.id)).toContain(id);

    expect((await api('DELETE', `/api/v1/contacts/${id}`)).body).toEqual({ success: true, message: 'Contact deleted successfully' });
    expect((await api('GET', `/api/v1/contacts/${id}`)).status).toBe(404);
    expect((await api('GET', `/api/v1/contacts/${id}/activities`)).status).toBe(404);
  });

  it.each([
    ['phone', { phone: '12' }],
    ['email', { email: 'not-an-email' }],
    ['timezone', { timezone: 'Mars/Olympus' }],
    ['tags.0', { tags: [''] }],
  ])('refuses a bad %s with a 400 naming it', async (field, body) => {
    const res = await api('POST', '/api/v1/contacts', { body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(field);
  });

  it('finds contacts by name prefix, email and phone with exact totals; search wins over {id}', async () => {
    const tag = unique();
    const make = (body: object) => api('POST', '/api/v1/contacts', { body });
    await make({ first_name: `Zed${tag}`, last_name: `Zed${tag}son`, email: `zed-${tag}@example.com`, phone: '+14155550111' });
    await make({ first_name: `Amy`, last_name: `Zed${tag}ski` });
    await make({ first_name: `Zed${tag}ina`, last_name: 'Other' });
    await make({ first_name: 'Nobody', last_name: 'Else' });

    const byPrefix = await api('GET', `/api/v1/contacts/search?q=ZED${tag}&limit=2`);
    expect(byPrefix.status).toBe(200);
    expect(byPrefix.body.meta.total).toBe(3); // the first contact matches on both names: counted once
    expect(byPrefix.body.data).toHaveLength(2);
    const rest = await api('GET', `/api/v1/contacts/search?q=zed${tag}&limit=2&offset=2`);
    expect(rest.body.data).toHaveLength(1);
    const ids = new Set([...byPrefix.body.data, ...rest.body.data].map((c: any) => c.id));
    expect(ids.size).toBe(3);

    const full = await api('GET', `/api/v1/contacts/search?q=${encodeURIComponent(`amy zed${tag}`)}`);
    expect(full.body.meta.total).toBe(1);
    const byEmail = await api('GET', `/api/v1/contacts/search?q=ZED-${tag}@example.com`);
    expect(byEmail.body.meta.total).toBe(1);
    expect(byEmail.body.data[0].email).toBe(`zed-${tag}@example.com`);
    const byPhone = await api('GET', `/api/v1/contacts/search?q=${encodeURIComponent('+1 415 555 0111')}`);
    expect(byPhone.body.data.map((c: any) => c.first_name)).toContain(`Zed${tag}`);
    expect((await api('GET', '/api/v1/contacts/search')).status).toBe(400);
    // Another organization finds nothing.
    expect((await api('GET', `/api/v1/contacts/search?q=zed${tag}`, { key: keyB })).body.meta.total).toBe(0);
  });

  it('follows renames in search', async () => {
    const tag = unique();
    const c = await api('POST', '/api/v1/contacts', { body: { first_name: `Old${tag}` } });
    await api('PATCH', `/api/v1/contacts/${c.body.data.id}`, { body: { first_name: `New${tag}` } });
    expect((await api('GET', `/api/v1/contacts/search?q=old${tag}`)).body.meta.total).toBe(0);
    expect((await api('GET', `/api/v1/contacts/search?q=new${tag}`)).body.meta.total).toBe(1);
  });

  it('keeps notes, a timeline in order and stats', async () => {
    const c = await api('POST', '/api/v1/contacts', { body: { first_name: 'Grace' } });
    const id = c.body.data.id;
    const n1 = await api('POST', `/api/v1/contacts/${id}/notes`, { body: { content: 'First call went well' } });
    expect(n1.body.data).toMatchObject({ contact_id: id, content: 'First call went well' });
    await api('POST', `/api/v1/contacts/${id}/notes/`, { body: { content: 'Send the brochure' } });
    expect((await api('POST', `/api/v1/contacts/${id}/notes`, { body: { content: '' } })).body.error.details.fields[0].path).toBe('content');

    const notes = await api('GET', `/api/v1/contacts/${id}/notes`);
    expect(notes.body.meta.total).toBe(2);
    expect(notes.body.data.map((n: any) => n.content)).toEqual(['First call went well', 'Send the brochure']);

    const timeline = await api('GET', `/api/v1/contacts/${id}/activities`);
    expect(timeline.body.meta).toBeUndefined();
    expect(timeline.body.data).toEqual([
      { type: 'note', description: 'Note added: First call went well', timestamp: expect.any(String) },
      { type: 'note', description: 'Note added: Send the brochure', timestamp: expect.any(String) },
    ]);
    const stats = await api('GET', `/api/v1/contacts/${id}/stats`);
    expect(stats.body.data).toEqual({ total_calls: 0, answered_calls: 0, total_call_duration_sec: 0, last_call_at: null, appointments: 0, notes: 2 });
    const calls = await api('GET', `/api/v1/contacts/${id}/calls`);
    expect(calls.body).toMatchObject({ data: [], meta: { total: 0 } });
  });

  it('answers 404 for another organization\'s contact and 400 for a non-UUID id', async () => {
    const c = await api('POST', '/api/v1/contacts', { body: { first_name: 'Private' } });
    const id = c.body.data.id;
    for (const path of [`/api/v1/contacts/${id}`, `/api/v1/contacts/${id}/activities`, `/api/v1/contacts/${id}/stats`, `/api/v1/contacts/${id}/notes`]) {
      expect((await api('GET', path, { key: keyB })).status).toBe(404);
    }
    expect((await api('POST', `/api/v1/contacts/${id}/notes`, { key: keyB, body: { content: 'x' } })).status).toBe(404);
    expect((await api('PATCH', `/api/v1/contacts/${id}`, { key: keyB, body: { company: 'x' } })).status).toBe(404);
    expect((await api('DELETE', `/api/v1/contacts/${id}`, { key: keyB })).status).toBe(404);
    expect((await api('GET', '/api/v1/contacts/not-a-uuid')).status).toBe(400);
  });
});

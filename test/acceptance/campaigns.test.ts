/**
 * Black-box: campaigns over real HTTP against the local runtime (CRUD, state moves, preview).
 * The engine's dialing is proven in test/integration/campaigns.test.ts with a test dialer.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

async function setup() {
  const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Caller' } })).body.data;
  const number = (await api('POST', '/api/v1/phone-numbers/import', { body: { phone: '+16175550150', type: 'pstn' } })).body.data;
  const contacts = [];
  for (const [i, phone] of ['+16175550161', '+16175550162', '+16175550162'].entries()) {
    contacts.push((await api('POST', '/api/v1/contacts', { body: { first_name: `P${i}`, phone } })).body.data);
  }
  return { agent, number, contacts };
}

describe('campaigns over HTTP', () => {
  it('create, list, get, patch (schedule merges), preview, start, pause, cancel, delete, with 409s for forbidden moves and 404s for another organization', async () => {
    const { agent, number, contacts } = await setup();
    const body = { name: 'Spring', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: [...contacts.map((c: any) => c.id), contacts[0].id] };

    const wrongFrom = await api('POST', '/api/v1/campaigns/', { body: { ...body, from_phone_number: '+16175550199' } });
    expect(wrongFrom.status).toBe(400);
    expect(wrongFrom.body.error.details.fields).toEqual([expect.objectContaining({ path: 'from_phone_number' })]);
    const overnight = await api('POST', '/api/v1/campaigns/', { body: { ...body, schedule: { window_start: '20:00', window_end: '08:00' } } });
    expect(overnight.body.error.details.fields).toEqual([expect.objectContaining({ path: 'schedule.window_end' })]);
    expect((await api('POST', '/api/v1/campaigns/', { body: { ...body, schedule: { max_concurrent: 101 } } })).status).toBe(400);

    const created = await api('POST', '/api/v1/campaigns/', { body: { ...body, schedule: { timezone: 'America/New_York', max_concurrent: 2 } } });
    expect(created.status).toBe(200);
    const campaign = created.body.data;
    expect(campaign).toMatchObject({
      status: 'draft', execution_status: 'idle', started_at: null, completed_at: null, from_phone_number: '+16175550150',
      contact_stats: { total: 3, pending: 3, contacted: 0, successful: 0, failed: 0, no_answer: 0, in_progress: 0 },
      schedule: { window_start: '09:00', window_end: '17:00', window_days: [1, 2, 3, 4, 5], timezone: 'America/New_York', max_concurrent: 2, retry_attempts: 0, retry_gap_min: 60, blackout_dates: [], use_contact_timezone: false },
    });
    const listed = await api('GET', '/api/v1/campaigns?status=draft');
    expect(listed.body.meta.total).toBe(1);
    expect(listed.body.data[0]).toMatchObject({ id: campaign.id, name: 'Spring', status: 'draft' });
    expect((await api('GET', `/api/v1/campaigns/${campaign.id}`)).body.data).toEqual(campaign);

    const patched = await api('PATCH', `/api/v1/campaigns/${campaign.id}`, { body: { schedule: { window_end: '18:30', retry_attempts: 2 } } });
    expect(patched.body.data.schedule).toMatchObject({ window_start: '09:00', window_end: '18:30', retry_attempts: 2, max_concurrent: 2, timezone: 'America/New_York' });

    const preview = await api('POST', `/api/v1/campaigns/${campaign.id}/preview`);
    expect(preview.status).toBe(200);
    expect(preview.body.data).toMatchObject({ would_dial: 2, skipped_counts: { duplicate_phone: 1 }, window_next_opens_at: expect.any(String), estimated_finish_at: expect.any(String) });
    expect(preview.body.data.skipped).toEqual([expect.objectContaining({ contact_id: contacts[2].id, reason: 'duplicate_phone', error_message: 'duplicate phone number' })]);
    expect((await api('GET', `/api/v1/campaigns/${campaign.id}/contacts?status=pending`)).body.meta.total).toBe(3);

    expect((await api('POST', `/api/v1/campaigns/${campaign.id}/pause`)).status).toBe(409);
    const started = await api('POST', `/api/v1/campaigns/${campaign.id}/start`);
    expect(started.body.data).toMatchObject({ status: 'running', started_at: expect.any(String) });
    expect((await api('POST', `/api/v1/campaigns/${campaign.id}/start`)).status).toBe(409);
    expect((await api('DELETE', `/api/v1/campaigns/${campaign.id}`)).status).toBe(409);
    expect((await api('DELETE', `/api/v1/phone-numbers/${number.id}`)).status).toBe(409); // held while running
    expect((await api('POST', `/api/v1/campaigns/${campaign.id}/contacts`, { body: { contact_ids: [contacts[0].id] } })).status).toBe(409);
    expect((await api('POST', `/api/v1/campaigns/${campaign.id}/pause`)).body.data).toMatchObject({ status: 'paused', execution_status: 'idle' });
    const added = await api('POST', `/api/v1/campaigns/${campaign.id}/contacts`, { body: { contact_ids: [contacts[0].id] } });
    expect(added.body.data.contact_stats.total).toBe(3);

    // Another organization sees nothing
    for (const [method, path] of [['GET', ''], ['PATCH', ''], ['DELETE', ''], ['POST', '/start'], ['POST', '/pause'], ['POST', '/cancel'], ['GET', '/contacts'], ['POST', '/preview']] as const) {
      const res = await api(method, `/api/v1/campaigns/${campaign.id}${path}`, { key: keyB, ...(method === 'PATCH' ? { body: { name: 'x' } } : {}) });
      expect([method, path, res.status]).toEqual([method, path, 404]);
    }
    expect((await api('POST', '/api/v1/campaigns', { key: keyB, body })).status).toBe(400);

    const cancelled = await api('POST', `/api/v1/campaigns/${campaign.id}/cancel`);
    expect(cancelled.body.data).toMatchObject({ status: 'completed', execution_status: 'cancelled', contact_stats: { pending: 0, failed: 3 } });
    const failed = await api('GET', `/api/v1/campaigns/${campaign.id}/contacts?status=failed&limit=10`);
    expect(failed.body.data.map((c: any) => c.error_message)).toEqual(['campaign cancelled', 'campaign cancelled', 'campaign cancelled']);
    expect((await api('PATCH', `/api/v1/campaigns/${campaign.id}`, { body: { name: 'Later' } })).status).toBe(409);
    expect((await api('DELETE', `/api/v1/phone-numbers/${number.id}`)).status).toBe(200); // released with the campaign over
    expect((await api('DELETE', `/api/v1/campaigns/${campaign.id}`)).status).toBe(200);
    expect((await api('GET', `/api/v1/campaigns/${campaign.id}`)).status).toBe(404);
  });
});

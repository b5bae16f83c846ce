/**
 * Black-box: campaigns over real HTTP against the local runtime (CRUD, state moves, preview), and
 * a campaign dialing through the real calls service and the simulated carrier. Queue delays run
 * in real time here (queueTimeScale 1), so the call sessions' started/ended times are the times the
 * platform saw and concurrency can be read from them; answered calls last 1 s after 1 s of ringing.
 * The engine's crash safety is proven in test/integration/campaigns.test.ts with a test dialer.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB], queueTimeScale: 1, env: { SIMULATED_CALL_SECONDS: '1' } });
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
      schedule: { window_start: '09:00', window_end: '17:00', window_days: [1, 2, 3, 4, 5], timezone: 'America/New_York', max_concurrent: 2, retry_attempts: 0, retry_gap_min: 60, blackout_dates: [], use_contact_timezone: true },
    });
    const listed = await api('GET', '/api/v1/campaigns?status=draft');
    expect(listed.body.meta.total).toBe(1);
    expect(listed.body.data[0]).toMatchObject({ id: campaign.id, name: 'Spring', status: 'draft' });
    expect((await api('GET', `/api/v1/campaigns/${campaign.id}`)).body.data).toEqual(campaign);

    // Blacked out today and tomorrow (New York): started, it dials no one whatever the hour the test runs.
    const day = (offsetDays: number) => new Intl.DateTimeFormat('en-CA', { timeZone: 'America/New_York' }).format(new Date(Date.now() + offsetDays * 86_400_000));
    const patched = await api('PATCH', `/api/v1/campaigns/${campaign.id}`, { body: { schedule: { window_end: '18:30', retry_attempts: 2, blackout_dates: [day(0), day(1)] } } });
    expect(patched.body.data.schedule).toMatchObject({ window_start: '09:00', window_end: '18:30', retry_attempts: 2, max_concurrent: 2, timezone: 'America/New_York' });

    const preview = await api('POST', `/api/v1/campaigns/${campaign.id}/preview`);
    expect(preview.status).toBe(200);
    expect(preview.body.data).toMatchObject({ would_dial: 2, skipped_counts: { duplicate_phone: 1 }, window_next_opens_at: expect.any(String), estimated_finish_at: expect.any(String) });
    expect(preview.body.data.skipped).toEqual([expect.objectContaining({ contact_id: contacts[2].id, reason: 'duplicate_phone', error_message: 'duplicate phone number' })]);
    expect((await api('GET', `/api/v1/campaigns/${campaign.id}/contacts?status=pending`)).body.meta.total).toBe(3);

    expect((await api('POST', `/api/v1/campaigns/${campaign.id}/pause`)).status).toBe(409);
    const started = await api('POST', `/api/v1/campaigns/${campaign.id}/start`);
    expect(started.body.data).toMatchObject({ status: 'running', started_at: expect.any(String) });
    await local().platform.scheduler.runNow('campaign-tick');
    await local().platform.queue.drain();
    expect((await api('GET', `/api/v1/campaigns/${campaign.id}`)).body.data).toMatchObject({ status: 'running', execution_status: 'waiting_window', contact_stats: { in_progress: 0, contacted: 0 } });
    expect((await api('GET', `/api/v1/calls?campaign_id=${campaign.id}`)).body.meta.total).toBe(0);
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

/** The most intervals [start, end) open at one moment (an end at t comes before a start at t). */
function maxOverlap(intervals: { start: string; end: string }[]): number {
  const points = intervals.flatMap((i) => [{ at: Date.parse(i.start), d: 1 }, { at: Date.parse(i.end), d: -1 }]);
  points.sort((a, b) => a.at - b.at || a.d - b.d);
  let open = 0;
  let most = 0;
  for (const p of points) most = Math.max(most, (open += p.d));
  return most;
}

describe('a campaign dialing through the calls service', () => {
  it('dials by itself inside an always-open window, at most max_concurrent calls at once and all of them used; answered contacts end successful with their call session, a no-answer waits one gap for its retry, a duplicate number fails without a call', async () => {
    // Prepare
    const [choice] = (await api('GET', '/api/v1/phone-numbers/available?area_code=212&limit=1')).body.data;
    const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } });
    expect(bought.status).toBe(200);
    const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Dialer', begin_message: 'Hi {{contact_name}}, this is {{campaign_name}}.', ring_duration_ms: 2000 } })).body.data;
    // Simulated carrier: a number ending 0 is answered, 7 never answers.
    const phones = ['+14155550210', '+14155550220', '+14155550230', '+14155550240', '+14155550217', '+14155550210'];
    const contacts = [];
    for (const [i, phone] of phones.entries()) {
      const created = await api('POST', '/api/v1/contacts', { body: { first_name: `C${i}`, phone } });
      expect(created.status).toBe(200);
      contacts.push(created.body.data);
    }
    const [noAnswer, duplicate] = [contacts[4], contacts[5]];
    const schedule = { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: 2, retry_attempts: 1, retry_gap_min: 1 };
    const created = await api('POST', '/api/v1/campaigns', {
      body: { name: 'Always open', agent_id: agent.id, phone_number_id: bought.body.data.id, from_phone_number: choice.phone_number, contact_ids: contacts.map((c: any) => c.id), schedule },
    });
    expect(created.status).toBe(200);
    const id = created.body.data.id;

    // Act: started, it dials by itself (its start queues the first dispatch; each end the next).
    expect((await api('POST', `/api/v1/campaigns/${id}/start`)).status).toBe(200);
    const campaign = await until(
      async () => (await api('GET', `/api/v1/campaigns/${id}`)).body.data,
      (c) => c.contact_stats.successful === 4 && c.contact_stats.in_progress === 0 && c.contact_stats.pending === 1,
      'the answered contacts ending successful',
    );

    // Assess: counters add up, and match a recount of the contacts
    expect(campaign.contact_stats).toEqual({ total: 6, contacted: 5, successful: 4, failed: 1, no_answer: 0, pending: 1, in_progress: 0 });
    const listed = (await api('GET', `/api/v1/campaigns/${id}/contacts?limit=100`)).body.data;
    const byStatus = (status: string) => listed.filter((c: any) => c.status === status);
    expect(byStatus('successful')).toHaveLength(4);
    expect(byStatus('pending')).toHaveLength(1);
    expect(byStatus('failed')).toHaveLength(1);

    for (const cc of byStatus('successful')) {
      expect(cc).toMatchObject({ attempt_count: 1, call_duration_sec: 1, error_message: '' });
      const call = (await api('GET', `/api/v1/calls/${cc.call_session_id}`)).body.data;
      expect(call).toMatchObject({ campaign_id: id, contact_id: cc.contact_id, to_phone_number: cc.phone, status: 'ended', disconnection_reason: 'completed', duration_sec: 1 });
      expect(call.transcript[0]).toEqual({ role: 'agent', text: `Hi ${cc.name}, this is Always open.`, time_sec: 0, agent_id: call.agent_id });
    }

    const [dup] = byStatus('failed');
    expect(dup).toMatchObject({ contact_id: duplicate.id, error_message: 'duplicate phone number', call_session_id: '', attempt_count: 0 });

    const [retrying] = byStatus('pending');
    expect(retrying).toMatchObject({ contact_id: noAnswer.id, attempt_count: 1 });
    const missed = (await api('GET', `/api/v1/calls/${retrying.call_session_id}`)).body.data;
    expect(missed).toMatchObject({ campaign_id: id, status: 'ended', disconnection_reason: 'no_answer', duration_sec: 0 });
    expect(retrying.next_retry_at).toBe(new Date(Date.parse(missed.ended_at) + 60_000).toISOString());

    // Five call sessions, one per dialed contact: never more than two at once, and two at some point.
    const calls = (await api('GET', `/api/v1/calls?campaign_id=${id}&limit=100`)).body.data;
    expect(calls).toHaveLength(5);
    expect(new Set(calls.map((c: any) => c.to_phone_number))).toEqual(new Set(phones.slice(0, 5)));
    expect(maxOverlap(calls.map((c: any) => ({ start: c.started_at, end: c.ended_at })))).toBe(2);

    // A tick finds nothing due before the gap has passed: no second call to the no-answer.
    await local().platform.scheduler.runNow('campaign-tick');
    expect((await api('GET', `/api/v1/calls?campaign_id=${id}`)).body.meta.total).toBe(5);
  });
});

describe('a campaign run to its end on real simulated calls', () => {
  it('pause lets the calls in flight finish and dials no one; resumed, it dials the rest two at a time and completes by itself with counters that add up and its events', async () => {
    // Prepare: five contacts who answer, one who never does (7), one who reaches voicemail (6), one the carrier fails (9); no retries.
    const number = (await api('POST', '/api/v1/phone-numbers/import', { body: { phone: '+16175550170', type: 'pstn' } })).body.data;
    const agent = (await api('POST', '/api/v1/agents', { body: { name: 'Runner', ring_duration_ms: 1000 } })).body.data;
    const phones = ['+13125550301', '+13125550302', '+13125550303', '+13125550304', '+13125550305', '+13125550307', '+13125550306', '+13125550309'];
    const contacts = [];
    for (const [i, phone] of phones.entries()) contacts.push((await api('POST', '/api/v1/contacts', { body: { first_name: `R${i}`, phone } })).body.data);
    // And two who must never be called: one on the do-not-call list, one who opted out.
    const listed = (await api('POST', '/api/v1/contacts', { body: { first_name: 'Listed', phone: '+13125550311' } })).body.data;
    expect((await api('POST', '/api/v1/dnc', { body: { phone: '+13125550311' } })).status).toBe(200);
    const optedOut = (await api('POST', '/api/v1/contacts', { body: { first_name: 'Out', phone: '+13125550312', opt_out: true } })).body.data;
    const schedule = { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: 2, retry_attempts: 0 };
    const id = (await api('POST', '/api/v1/campaigns', {
      body: { name: 'To the end', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: [...contacts, listed, optedOut].map((c: any) => c.id), schedule },
    })).body.data.id;
    const read = async () => (await api('GET', `/api/v1/campaigns/${id}`)).body.data;
    const callsOf = async () => (await api('GET', `/api/v1/calls?campaign_id=${id}&limit=100`)).body.data;
    const preview = (await api('POST', `/api/v1/campaigns/${id}/preview`)).body.data;
    expect(preview).toMatchObject({ would_dial: 8, skipped_counts: { do_not_call: 1, opt_out: 1 } });
    expect(preview.skipped).toEqual(expect.arrayContaining([
      expect.objectContaining({ contact_id: listed.id, reason: 'do_not_call', error_message: 'on do-not-call list' }),
      expect.objectContaining({ contact_id: optedOut.id, reason: 'opt_out', error_message: 'contact opted out' }),
    ]));

    // Act: start, and pause as soon as two calls are in flight.
    expect((await api('POST', `/api/v1/campaigns/${id}/start`)).status).toBe(200);
    await until(read, (c) => c.contact_stats.in_progress === 2, 'two calls in flight');
    const paused = await api('POST', `/api/v1/campaigns/${id}/pause`);
    expect(paused.body.data).toMatchObject({ status: 'paused' });
    const dialedBeforePause = paused.body.data.contact_stats.contacted;

    // Assess: the calls in flight end and are counted; nobody else is dialed, even by a tick.
    const settled = await until(read, (c) => c.contact_stats.in_progress === 0, 'the calls in flight ending');
    await local().platform.scheduler.runNow('campaign-tick');
    await local().platform.queue.drain();
    expect(settled).toMatchObject({ status: 'paused', contact_stats: { contacted: dialedBeforePause } });
    expect(await callsOf()).toHaveLength(dialedBeforePause);
    expect((await read()).contact_stats.contacted).toBe(dialedBeforePause);

    // Act: resume; the campaign runs to its end without any tick.
    expect((await api('POST', `/api/v1/campaigns/${id}/start`)).body.data).toMatchObject({ status: 'running' });
    const done = await until(read, (c) => c.status === 'completed', 'the campaign completing by itself');

    // Assess: counters add up and equal a recount of the contacts; each dialed once, two at a time at most, and two at some point.
    expect(done).toMatchObject({ execution_status: 'done', completed_at: expect.any(String) });
    expect(done.contact_stats).toEqual({ total: 10, contacted: 8, successful: 5, no_answer: 2, failed: 3, pending: 0, in_progress: 0 });
    const campaignContacts = (await api('GET', `/api/v1/campaigns/${id}/contacts?limit=100`)).body.data;
    const recount: Record<string, number> = {};
    for (const cc of campaignContacts) recount[cc.status] = (recount[cc.status] ?? 0) + 1;
    expect(recount).toEqual({ successful: 5, no_answer: 2, failed: 3 });
    const never = campaignContacts.filter((cc: any) => [listed.id, optedOut.id].includes(cc.contact_id));
    expect(never.map((cc: any) => [cc.error_message, cc.attempt_count, cc.call_session_id]).sort()).toEqual([['contact opted out', 0, ''], ['on do-not-call list', 0, '']]);
    const calls = await callsOf();
    expect(calls.map((c: any) => c.to_phone_number).sort()).toEqual([...phones].sort());
    expect(calls.every((c: any) => c.status === 'ended')).toBe(true);
    expect(maxOverlap(calls.map((c: any) => ({ start: c.started_at, end: c.ended_at })))).toBe(2);
    const events = (await api('GET', '/api/v1/events?type=campaign.completed&limit=100')).body.data;
    expect(events.filter((e: any) => e.data.id === id)).toHaveLength(1);
  });
});

import { v7 as uuidv7 } from 'uuid';
import { createAgent } from '../../shared/domain/agents/service';
import { createContact } from '../../shared/domain/contacts/service';
import { importPhoneNumber } from '../../shared/domain/phone-numbers/service';
import { ImportBody } from '../../shared/domain/phone-numbers/schemas';
import { CreateCampaignBody } from '../../shared/domain/campaigns/schemas';
import {
  addCampaignContacts, cancelCampaign, createCampaign, deleteCampaign, getCampaign, listCampaignContacts, listCampaigns, pauseCampaign, startCampaign, updateCampaign,
} from '../../shared/domain/campaigns/service';
import { dispatchCampaign } from '../../shared/domain/campaigns/engine';
import { previewCampaign } from '../../shared/domain/campaigns/preview';
import { recountContacts } from '../../shared/domain/campaigns/model';
import { tryNormalizeE164 } from '../../shared/domain/common/phone';
import { keys } from '../../shared/db/keys';
import { getItem, putNew, queryAll, transact } from '../../shared/db/store';
import { NotFoundError, ValidationError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { rejection } from '../support/rejection';
import { deliver, installTestEngine } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

const REAL = ['nextTick', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'hrtime', 'performance'] as const;
/** The manual clock: only `Date` moves, and only when told to. */
const clock = {
  set(at: string | number) { jest.setSystemTime(new Date(at)); },
  advance(ms: number) { jest.setSystemTime(new Date(Date.now() + ms)); },
};
beforeEach(() => jest.useFakeTimers({ now: new Date('2031-03-05T10:00:00.000Z'), doNotFake: [...REAL] })); // a Wednesday
afterEach(() => jest.useRealTimers());

let engine: ReturnType<typeof installTestEngine>;
beforeEach(() => { engine = installTestEngine(); });

const randomPhone = (prefix: string) => {
  for (;;) {
    const n = tryNormalizeE164(`${prefix}${Math.floor(2_000_000 + Math.random() * 7_000_000)}`);
    if (n) return n;
  }
};
const ALWAYS = { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6] };

async function world(contactCount: number, phones?: (i: number) => string) {
  const org = uuidv7();
  const agent = await createAgent(org, { name: 'Caller' } as never);
  const number = await importPhoneNumber(org, ImportBody.parse({ phone: randomPhone('+1415'), type: 'pstn' }));
  const contacts: Awaited<ReturnType<typeof createContact>>[] = [];
  for (let i = 0; i < contactCount; i++) contacts.push(await createContact(org, { first_name: `C${i}`, phone: phones ? phones(i) : randomPhone('+1646') }));
  const create = (over: Record<string, unknown> = {}) =>
    createCampaign(org, CreateCampaignBody.parse({
      name: 'Spring', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: contacts.map((c) => c.id), ...over,
    }));
  return { org, agent, number, contacts, create };
}

/** Delivers every queued dispatch message (optionally each twice) until none are left. */
async function drain(times = 1) {
  for (let i = 0; i < 50; i++) {
    const bodies = engine.queued.take('campaign-dispatch');
    if (!bodies.length) return;
    await deliver('functions/jobs/campaign-dispatch.ts', bodies.flatMap((b) => Array(times).fill(b)));
  }
}

async function inUse(org: string, numberId: string) {
  return (await getItem<{ in_use: number }>(keys.phoneNumber(org, numberId)))!.in_use;
}

describe('a campaign with an always-open window', () => {
  it('runs to completion by itself, never more than max_concurrent calls at once while using all of them, counters adding up', async () => {
    // Prepare
    const w = await world(7);
    const campaign = await w.create({ schedule: { ...ALWAYS, max_concurrent: 3 } });
    expect(campaign).toMatchObject({ status: 'draft', execution_status: 'idle', contact_stats: { total: 7, pending: 7, contacted: 0 } });
    // Act
    const started = await startCampaign(w.org, campaign.id);
    expect(started.status).toBe('running');
    expect(await inUse(w.org, w.number.id)).toBe(1);
    await drain();
    const seen: number[] = [];
    while (engine.dialer.inFlight(campaign.id).length) {
      seen.push(engine.dialer.inFlight(campaign.id).length);
      expect((await getCampaign(w.org, campaign.id)).execution_status).toBe('dispatching');
      await engine.dialer.end(engine.dialer.inFlight(campaign.id)[0]!);
      await drain();
    }
    // Assess
    expect(seen.slice(0, 5)).toEqual([3, 3, 3, 3, 3]);
    expect(engine.dialer.maxInFlight).toBe(3);
    expect(engine.dialer.calls).toHaveLength(7);
    const done = await getCampaign(w.org, campaign.id);
    expect(done).toMatchObject({ status: 'completed', execution_status: 'done', completed_at: expect.any(String), contact_stats: { total: 7, contacted: 7, successful: 7, pending: 0, in_progress: 0, failed: 0, no_answer: 0 } });
    expect(await recountContacts(w.org, campaign.id)).toEqual(done.contact_stats);
    expect(await inUse(w.org, w.number.id)).toBe(0);
    const { items } = await listCampaignContacts(w.org, campaign.id, { limit: 100, offset: 0 });
    expect(items.every((c) => c.status === 'successful' && c.attempt_count === 1 && c.call_session_id && c.call_duration_sec === 42)).toBe(true);
    const events: { type: string }[] = [];
    for await (const e of queryAll<{ type: string }>({ pkName: 'pk', pkValue: keys.partition(w.org), skName: 'sk', skPrefix: 'EVENT#' })) events.push(e);
    // The test freezes Date, so both ids share a millisecond: compare as a set.
    expect(events.map((e) => e.type).sort()).toEqual(['campaign.completed', 'campaign.started']);
    // Neither the tick's index nor the status lists keep it running
    expect((await listCampaigns(w.org, { limit: 10, offset: 0, status: 'completed' })).meta.total).toBe(1);
    expect((await listCampaigns(w.org, { limit: 10, offset: 0, status: 'running' })).meta.total).toBe(0);
  });
});

describe('windows', () => {
  it('a window closed today dials no one and shows waiting_window; it dials when the day comes', async () => {
    const w = await world(2);
    const campaign = await w.create({ schedule: { ...ALWAYS, window_days: [4], use_contact_timezone: false } }); // the campaign's zone (UTC) // Thursdays; today is Wednesday
    await startCampaign(w.org, campaign.id);
    await drain();
    expect(engine.dialer.calls).toHaveLength(0);
    expect((await getCampaign(w.org, campaign.id)).execution_status).toBe('waiting_window');
    clock.set('2031-03-06T00:00:00.000Z');
    await dispatchCampaign(w.org, campaign.id);
    expect(engine.dialer.calls).toHaveLength(1);
  });

  it('a blackout date today dials no one (contact time zones too)', async () => {
    const w = await world(2);
    const campaign = await w.create({ schedule: { ...ALWAYS, blackout_dates: ['2031-03-05'], use_contact_timezone: true } });
    await startCampaign(w.org, campaign.id);
    await drain();
    expect(engine.dialer.calls).toHaveLength(0);
    const now = await getCampaign(w.org, campaign.id);
    expect(now).toMatchObject({ status: 'running', execution_status: 'waiting_window', contact_stats: { pending: 2 } });
    const preview = await previewCampaign(w.org, campaign.id, {});
    expect(preview.window_next_opens_at).toBe('2031-03-06T00:00:00.000Z');
  });
});

describe('pause and cancel', () => {
  it('pause stops new dials while calls in flight finish; start resumes', async () => {
    const w = await world(4);
    const campaign = await w.create({ schedule: { ...ALWAYS, max_concurrent: 2 } });
    await startCampaign(w.org, campaign.id);
    await drain();
    expect(engine.dialer.inFlight()).toHaveLength(2);
    await pauseCampaign(w.org, campaign.id);
    for (const call of engine.dialer.inFlight()) await engine.dialer.end(call);
    await drain();
    expect(engine.dialer.calls).toHaveLength(2);
    expect(await getCampaign(w.org, campaign.id)).toMatchObject({ status: 'paused', execution_status: 'idle', contact_stats: { successful: 2, pending: 2, in_progress: 0 } });
    expect(await inUse(w.org, w.number.id)).toBe(1);
    expect(await rejection(pauseCampaign(w.org, campaign.id))).toMatchObject({ statusCode: 409 });
    await startCampaign(w.org, campaign.id);
    await drain();
    expect(engine.dialer.inFlight()).toHaveLength(2);
  });

  it('cancel fails what was pending with "campaign cancelled", lets the call in flight finish without retry, and frees the number', async () => {
    const w = await world(3);
    const campaign = await w.create({ schedule: { ...ALWAYS, max_concurrent: 1, retry_attempts: 3 } });
    await startCampaign(w.org, campaign.id);
    await drain();
    const cancelled = await cancelCampaign(w.org, campaign.id);
    expect(cancelled).toMatchObject({ status: 'completed', execution_status: 'cancelled', contact_stats: { pending: 0, failed: 2, in_progress: 1 } });
    expect(await inUse(w.org, w.number.id)).toBe(0);
    await engine.dialer.end(engine.dialer.inFlight()[0]!, { answered: false, disconnectionReason: 'no_answer' });
    await drain();
    expect(engine.dialer.calls).toHaveLength(1);
    const end = await getCampaign(w.org, campaign.id);
    expect(end.contact_stats).toMatchObject({ failed: 2, no_answer: 1, in_progress: 0, pending: 0 });
    expect(await recountContacts(w.org, campaign.id)).toEqual(end.contact_stats);
    const failed = await listCampaignContacts(w.org, campaign.id, { limit: 10, offset: 0, status: 'failed' });
    expect(failed.items.map((c) => c.error_message)).toEqual(['campaign cancelled', 'campaign cancelled']);
    expect(await rejection(startCampaign(w.org, campaign.id))).toMatchObject({ statusCode: 409 });
    expect(await getItem(keys.campaign(w.org, campaign.id))).not.toHaveProperty('gsi2pk');
  });
});

describe('retries', () => {
  it('a no-answer with a retry left returns to pending, next_retry_at one gap after the attempt, dialed again no earlier', async () => {
    const w = await world(1);
    const campaign = await w.create({ schedule: { ...ALWAYS, retry_attempts: 1, retry_gap_min: 30 } });
    await startCampaign(w.org, campaign.id);
    await drain();
    const endedAt = new Date(Date.now() + 20_000);
    clock.set(endedAt.getTime());
    await engine.dialer.end(engine.dialer.calls[0]!, { answered: false, disconnectionReason: 'busy', durationSec: 0 }, endedAt);
    await drain();
    const [cc] = (await listCampaignContacts(w.org, campaign.id, { limit: 10, offset: 0 })).items;
    expect(cc).toMatchObject({ status: 'pending', attempt_count: 1, next_retry_at: new Date(endedAt.getTime() + 30 * 60_000).toISOString() });
    clock.advance(30 * 60_000 - 1000);
    await dispatchCampaign(w.org, campaign.id);
    expect(engine.dialer.calls).toHaveLength(1);
    clock.advance(1000);
    await dispatchCampaign(w.org, campaign.id);
    expect(engine.dialer.calls.map((c) => c.attempt)).toEqual([1, 2]);
    await engine.dialer.end(engine.dialer.calls[1]!, { answered: false, disconnectionReason: 'no_answer' });
    expect(await getCampaign(w.org, campaign.id)).toMatchObject({ status: 'completed', contact_stats: { no_answer: 1, contacted: 1, pending: 0 } });
  });

  it('a retry due outside the window moves to the next opening', async () => {
    const w = await world(1);
    const campaign = await w.create({ schedule: { window_start: '09:00', window_end: '10:30', window_days: [3, 4], retry_attempts: 1, retry_gap_min: 60, use_contact_timezone: false } }); // the campaign's zone (UTC)
    await startCampaign(w.org, campaign.id);
    await drain();
    await engine.dialer.end(engine.dialer.calls[0]!, { answered: false, disconnectionReason: 'failed' });
    const [cc] = (await listCampaignContacts(w.org, campaign.id, { limit: 10, offset: 0 })).items;
    expect(cc).toMatchObject({ status: 'pending', next_retry_at: '2031-03-06T09:00:00.000Z' });
  });
});

describe('contacts that are never dialed', () => {
  it('do-not-call, opt-out and a duplicate number fail without a call and are named by the preview', async () => {
    const shared = randomPhone('+1212');
    const listed = randomPhone('+1213');
    const phones = [randomPhone('+1646'), shared, shared, listed];
    const w = await world(4, (i) => phones[i]!);
    const optedOut = await createContact(w.org, { first_name: 'No', phone: randomPhone('+1646'), opt_out: true });
    // The do-not-call entry as the DNC service stores it (stand-in until the calls-parts branch merges).
    await transact([putNew({ pk: keys.partition(w.org), sk: `DNC#${listed}`, phone: listed })]);
    const campaign = await w.create({ contact_ids: [...w.contacts.map((c) => c.id), optedOut.id], schedule: { ...ALWAYS, max_concurrent: 5 } });
    const preview = await previewCampaign(w.org, campaign.id, {});
    expect(preview.would_dial).toBe(2);
    expect(preview.skipped.map((s) => [s.contact_id, s.reason, s.error_message]).sort()).toEqual([
      [w.contacts[2]!.id, 'duplicate_phone', 'duplicate phone number'],
      [w.contacts[3]!.id, 'do_not_call', 'on do-not-call list'],
      [optedOut.id, 'opt_out', 'contact opted out'],
    ].sort());
    await startCampaign(w.org, campaign.id);
    await drain();
    expect(engine.dialer.calls.map((c) => c.toPhoneNumber).sort()).toEqual([phones[0], shared].sort());
    const failed = await listCampaignContacts(w.org, campaign.id, { limit: 10, offset: 0, status: 'failed' });
    expect(failed.items.map((c) => c.error_message).sort()).toEqual(['contact opted out', 'duplicate phone number', 'on do-not-call list']);
    expect(failed.items.every((c) => c.attempt_count === 0 && c.call_session_id === '')).toBe(true);
    expect((await getCampaign(w.org, campaign.id)).contact_stats).toMatchObject({ failed: 3, in_progress: 2, contacted: 2 });
  });

  it('a number brought in again by a later add is dialed once: the claim takes the number, the other contact fails as a duplicate, and the preview names it', async () => {
    const shared = randomPhone('+1212');
    const w = await world(3, (i) => (i === 1 ? randomPhone('+1646') : shared));
    const campaign = await w.create({ contact_ids: [w.contacts[0]!.id, w.contacts[1]!.id], schedule: { ...ALWAYS, max_concurrent: 5 } });
    clock.advance(1000); // the later add is due later, as it is in time
    await addCampaignContacts(w.org, campaign.id, [w.contacts[2]!.id]);
    const preview = await previewCampaign(w.org, campaign.id, {});
    expect(preview.skipped.map((s) => [s.contact_id, s.reason])).toEqual([[w.contacts[2]!.id, 'duplicate_phone']]);
    expect(preview.would_dial).toBe(2);
    await startCampaign(w.org, campaign.id);
    await drain(2);
    expect(engine.dialer.calls.map((c) => c.toPhoneNumber).sort()).toEqual([shared, w.contacts[1]!.phone].sort());
    const failed = await listCampaignContacts(w.org, campaign.id, { limit: 10, offset: 0, status: 'failed' });
    expect(failed.items.map((c) => [c.contact_id, c.error_message, c.attempt_count])).toEqual([[w.contacts[2]!.id, 'duplicate phone number', 0]]);
    expect(await recountContacts(w.org, campaign.id)).toEqual((await getCampaign(w.org, campaign.id)).contact_stats);
    // A retry of the number's owner keeps it.
    const owner = engine.dialer.calls.find((c) => c.toPhoneNumber === shared)!;
    await engine.dialer.end(owner, { disconnectionReason: 'busy', answered: false });
    expect(engine.dialer.calls.filter((c) => c.toPhoneNumber === shared)).toHaveLength(1);
  });
});

describe('crash safety', () => {
  it('duplicated dispatch and outcome messages never dial a contact twice for one attempt; contact_stats equals a recount after a messy run', async () => {
    const w = await world(12);
    const campaign = await w.create({ schedule: { ...ALWAYS, max_concurrent: 4, retry_attempts: 2, retry_gap_min: 1 } });
    await startCampaign(w.org, campaign.id);
    const reasons = ['completed', 'no_answer', 'busy', 'voicemail', 'failed'] as const;
    let i = 0;
    for (let round = 0; round < 200; round++) {
      await drain(3); // every dispatch delivered three times
      const flying = engine.dialer.inFlight(campaign.id);
      if (!flying.length) {
        if ((await getCampaign(w.org, campaign.id)).status === 'completed') break;
        clock.advance(61_000);
        await dispatchCampaign(w.org, campaign.id);
        continue;
      }
      expect(flying.length).toBeLessThanOrEqual(4);
      const call = flying[0]!;
      const reason = reasons[i++ % reasons.length]!;
      const outcome = { answered: reason === 'completed', disconnectionReason: reason };
      const first = await engine.dialer.end(call, outcome);
      const again = await engine.dialer.end(call, outcome); // the same outcome delivered again
      expect(first.applied).toBe(true);
      expect(again.applied).toBe(false);
    }
    const done = await getCampaign(w.org, campaign.id);
    expect(done.status).toBe('completed');
    expect(await recountContacts(w.org, campaign.id)).toEqual(done.contact_stats);
    const perAttempt = new Set(engine.dialer.invocations.map((c) => `${c.campaignContactId}#${c.attempt}`));
    expect(perAttempt.size).toBe(engine.dialer.invocations.length);
    expect(engine.dialer.maxInFlight).toBeLessThanOrEqual(4);
    expect(done.contact_stats.total).toBe(12);
    expect(done.contact_stats.successful + done.contact_stats.failed + done.contact_stats.no_answer).toBe(12);
  });

  it('a contact claimed by a worker that died before placing its call is re-placed after the lease, same attempt, not stuck in_progress', async () => {
    const w = await world(1);
    const campaign = await w.create({ schedule: { ...ALWAYS } });
    await startCampaign(w.org, campaign.id);
    engine.dialer.hangNext = true;
    void drain(); // the worker "dies": its dialer call never answers
    // Until its one dialer call is under way (a fixed 300 ms wait was too short on a loaded machine).
    for (const deadline = Date.now() + 10_000; engine.dialer.invocations.length < 1 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 100)); // and nothing more follows
    expect(engine.dialer.invocations).toHaveLength(1);
    let [cc] = (await listCampaignContacts(w.org, campaign.id, { limit: 10, offset: 0 })).items;
    expect(cc).toMatchObject({ status: 'in_progress', call_session_id: '' });
    await dispatchCampaign(w.org, campaign.id); // lease still valid: nothing re-placed
    expect(engine.dialer.invocations).toHaveLength(1);
    clock.advance(61_000);
    await dispatchCampaign(w.org, campaign.id);
    expect(engine.dialer.invocations.map((c) => c.attempt)).toEqual([1, 1]);
    [cc] = (await listCampaignContacts(w.org, campaign.id, { limit: 10, offset: 0 })).items;
    expect(cc).toMatchObject({ status: 'in_progress', call_session_id: engine.dialer.calls[0]!.callId, attempt_count: 1 });
    engine.dialer.releaseHung();
    await engine.dialer.end(engine.dialer.calls[0]!);
    expect((await getCampaign(w.org, campaign.id)).status).toBe('completed');
  });
});

describe('contacts, references and tenancy', () => {
  it('adds contacts to a draft or paused campaign, ignoring duplicates and ones already in it', async () => {
    const w = await world(3);
    const campaign = await w.create({ contact_ids: [w.contacts[0]!.id, w.contacts[0]!.id] });
    expect(campaign.contact_stats.total).toBe(1);
    const added = await addCampaignContacts(w.org, campaign.id, w.contacts.map((c) => c.id));
    expect(added.contact_stats).toMatchObject({ total: 3, pending: 3 });
    expect(await recountContacts(w.org, campaign.id)).toEqual(added.contact_stats);
  });

  it('checks every reference in the organization, with 400s naming them', async () => {
    const w = await world(1);
    const err = await rejection(w.create({ from_phone_number: randomPhone('+1617'), contact_ids: [w.contacts[0]!.id, uuidv7()] }));
    expect(err).toBeInstanceOf(ValidationError);
    expect(JSON.stringify((err as ValidationError).details)).toMatch(/from_phone_number/);
    const missing = await rejection(w.create({ contact_ids: [uuidv7()] }));
    expect(JSON.stringify((missing as ValidationError).details)).toMatch(/contact_ids\[0\]/);
  });

  it('another organization gets 404 for every campaign operation and cannot build a campaign from our agent, number or contacts', async () => {
    const w = await world(1);
    const campaign = await w.create();
    const other = uuidv7();
    const calls = [
      getCampaign(other, campaign.id), updateCampaign(other, campaign.id, { name: 'x' }), deleteCampaign(other, campaign.id),
      startCampaign(other, campaign.id), pauseCampaign(other, campaign.id), cancelCampaign(other, campaign.id),
      listCampaignContacts(other, campaign.id, { limit: 10, offset: 0 }), addCampaignContacts(other, campaign.id, [w.contacts[0]!.id]),
      previewCampaign(other, campaign.id, {}),
    ];
    for (const call of calls) expect(await rejection(call)).toBeInstanceOf(NotFoundError);
    const stolen = await rejection(createCampaign(other, CreateCampaignBody.parse({
      name: 'x', agent_id: w.agent.id, phone_number_id: w.number.id, from_phone_number: w.number.phone, contact_ids: [w.contacts[0]!.id],
    })));
    expect(stolen).toBeInstanceOf(ValidationError);
    expect((stolen as ValidationError).details).toMatchObject({ fields: expect.arrayContaining([expect.objectContaining({ path: 'agent_id' }), expect.objectContaining({ path: 'phone_number_id' })]) });
    expect((await getCampaign(w.org, campaign.id)).status).toBe('draft');
  });
});

import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetTelephony } from '../../shared/adapters/telephony';
import { keys, Prefix } from '../../shared/db/keys';
import { getItem, queryAll } from '../../shared/db/store';
import { createAgent } from '../../shared/domain/agents/service';
import { handleCallEventMessage } from '../../shared/domain/calls/carrier-events';
import { placeQueuedCall, FINALIZE_GRACE_MS, type CallEventMessage } from '../../shared/domain/calls/lifecycle';
import { callsServiceDialer } from '../../shared/domain/calls/campaign-calls';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import type { CallItem } from '../../shared/domain/calls/service';
import { installCampaignDialer } from '../../shared/domain/campaigns/dialer';
import { recountContacts, type CampaignContactItem, type CampaignItem } from '../../shared/domain/campaigns/model';
import { CreateCampaignBody } from '../../shared/domain/campaigns/schemas';
import { createCampaign, startCampaign } from '../../shared/domain/campaigns/service';
import { tryNormalizeE164 } from '../../shared/domain/common/phone';
import { createContact } from '../../shared/domain/contacts/service';
import { AddDncBody } from '../../shared/domain/dnc/schemas';
import { addDncEntry } from '../../shared/domain/dnc/service';
import { ImportBody } from '../../shared/domain/phone-numbers/schemas';
import { importPhoneNumber } from '../../shared/domain/phone-numbers/service';
import { logger } from '../../shared/logger';
import { CapturedQueue, deliver } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

/** Fault injection: `failOutcomes` makes the engine's outcome write fail that many times, as a throttled table would. */
let failOutcomes = 0;
jest.mock('../../shared/domain/campaigns/outcomes', () => {
  const actual = jest.requireActual('../../shared/domain/campaigns/outcomes');
  return {
    ...actual,
    recordCampaignCallOutcome: (...args: unknown[]) => {
      if (failOutcomes > 0) {
        failOutcomes--;
        return Promise.reject(new Error('ProvisionedThroughputExceededException'));
      }
      return actual.recordCampaignCallOutcome(...args);
    },
  };
});

/**
 * Campaigns dialing through the calls service (the default dialer), against DynamoDB Local: the
 * paths where the call, not the campaign, decides how an attempt ends. The queue is a capturing
 * stand-in; each test delivers the dispatch, call-place and call-events work itself.
 */
let queued: CapturedQueue;
beforeEach(() => {
  queued = new CapturedQueue();
  installLocalQueue(queued);
  installCampaignDialer(undefined); // the calls service
});
afterAll(() => installLocalQueue(undefined));

const randomPhone = (prefix: string, lastDigit: string) => {
  for (;;) {
    const n = tryNormalizeE164(`${prefix}${Math.floor(200_000 + Math.random() * 700_000)}${lastDigit}`);
    if (n) return n;
  }
};

/** One campaign of one contact (answering number unless told), started, with its first dispatch delivered. */
async function dialedCampaign(schedule: Record<string, unknown> = {}, lastDigit = '1') {
  const org = uuidv7();
  const agent = await createAgent(org, { name: 'Caller', ring_duration_ms: 1000, max_call_duration_ms: 60_000 } as never);
  const number = await importPhoneNumber(org, ImportBody.parse({ phone: randomPhone('+1415', '0'), type: 'pstn' }));
  const contact = await createContact(org, { first_name: 'Ada', phone: randomPhone('+1646', lastDigit) });
  const campaign = await createCampaign(org, CreateCampaignBody.parse({
    name: 'Calls', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: [contact.id],
    schedule: { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', max_concurrent: 1, retry_attempts: 1, retry_gap_min: 30, ...schedule },
  }));
  await startCampaign(org, campaign.id);
  await deliver('functions/jobs/campaign-dispatch.ts', queued.take('campaign-dispatch'));
  const cc = await campaignContact(org, campaign.id);
  expect(cc).toMatchObject({ status: 'in_progress', attempt_count: 1 });
  return { org, campaignId: campaign.id, contact, agent, number, cc };
}

async function campaignContact(org: string, campaignId: string): Promise<CampaignContactItem> {
  for await (const cc of queryAll<CampaignContactItem>({ pkName: 'pk', pkValue: keys.campaignPartition(org, campaignId), skName: 'sk', skPrefix: 'CC#' })) return cc;
  throw new Error('no campaign contact');
}

async function callsOf(org: string): Promise<CallItem[]> {
  const out: CallItem[] = [];
  for await (const c of queryAll<CallItem>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: Prefix.call })) out.push(c);
  return out;
}

const campaignOf = (org: string, id: string) => getItem<CampaignItem>(keys.campaign(org, id)) as Promise<CampaignItem>;

async function placeAll(org: string) {
  for (const m of queued.take('call-place') as { call_id: string }[]) await placeQueuedCall(org, m.call_id);
}

describe('a campaign dialing through the calls service', () => {
  it('the same attempt placed again, even twice at once, answers the one call already made, and the carrier is asked once', async () => {
    // Prepare
    const { org, campaignId, contact, agent, number, cc } = await dialedCampaign();
    const request = {
      organizationId: org, campaignId, campaignContactId: cc.id, attempt: 1, agentId: agent.id, fromPhoneNumber: number.phone!,
      toPhoneNumber: contact.phone!, contactId: contact.id, dynamicVariables: {},
    };
    // Act: a redelivered dispatch places the same attempt twice at once, then once more after the dial.
    const again = await Promise.all([callsServiceDialer.placeCampaignCall(request), callsServiceDialer.placeCampaignCall(request)]);
    await placeAll(org);
    const later = await callsServiceDialer.placeCampaignCall(request);
    await placeAll(org);
    // Assess
    const calls = await callsOf(org);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ campaign_id: campaignId, campaign_contact_id: cc.id, campaign_attempt: 1, status: 'queued' });
    expect(again.map((r) => r.callId)).toEqual([calls[0]!.id, calls[0]!.id]);
    expect(later.callId).toBe(calls[0]!.id);
    expect(calls[0]!.provider_call_id).toMatch(/^SIMCA/);
    const course = queued.take('call-events') as CallEventMessage[];
    expect(new Set(course.map((m) => (m as { event: { providerCallId: string } }).event.providerCallId))).toEqual(new Set([calls[0]!.provider_call_id]));
    expect(course.filter((m) => (m as { event: { status: string } }).event.status === 'queued')).toHaveLength(1);
    // The course runs; the contact ends successful once.
    for (const m of course) await handleCallEventMessage(m);
    expect(await campaignContact(org, campaignId)).toMatchObject({ status: 'successful', attempt_count: 1, call_session_id: calls[0]!.id });
    expect((await campaignOf(org, campaignId)).contact_stats).toEqual(await recountContacts(org, campaignId));
  });

  it('a carrier that is unavailable (503) when the call is placed: not an attempt; the contact is due again after a back-off, and dialed when the carrier is back', async () => {
    // Prepare: no retries at all, so a counted attempt would fail the contact for good
    const { org, campaignId } = await dialedCampaign({ retry_attempts: 0 });
    process.env.SIMULATED_CARRIER_FAIL = 'call';
    resetTelephony();
    try {
      // Act: the carrier refuses the placement
      await placeAll(org);
    } finally {
      delete process.env.SIMULATED_CARRIER_FAIL;
      resetTelephony();
    }
    // Assess
    const [call] = await callsOf(org);
    expect(call).toMatchObject({ status: 'ended', disconnection_reason: 'failed', error_message: expect.stringContaining('The carrier did not place the call') });
    expect(call!.provider_call_id).toBeUndefined();
    let cc = await campaignContact(org, campaignId);
    expect(cc).toMatchObject({ status: 'pending', attempt_count: 1, undialed_attempts: 1, dial_failures: 1, call_session_id: call!.id });
    const backoff = Date.parse(cc.next_retry_at!) - Date.parse(call!.ended_at!);
    expect(backoff).toBeGreaterThanOrEqual(59_000);
    expect(backoff).toBeLessThanOrEqual(61_000 + 5_000);
    expect((await campaignOf(org, campaignId)).contact_stats).toEqual(await recountContacts(org, campaignId));
    // Act: the carrier is back; the contact is dispatched when due (the time of the dispatch given)
    queued.take('campaign-dispatch');
    const { dispatchCampaign } = await import('../../shared/domain/campaigns/engine');
    await dispatchCampaign(org, campaignId, new Date(Date.parse(cc.next_retry_at!) + 1000));
    await placeAll(org);
    for (const m of queued.take('call-events') as CallEventMessage[]) await handleCallEventMessage(m);
    // Assess: the second placement is attempt 2, dialed, and the contact ends successful
    cc = await campaignContact(org, campaignId);
    expect(cc).toMatchObject({ status: 'successful', attempt_count: 2 });
    const campaign = await campaignOf(org, campaignId);
    expect(campaign.contact_stats).toEqual(await recountContacts(org, campaignId));
    expect(campaign).toMatchObject({ status: 'completed', contact_stats: { successful: 1, failed: 0, in_progress: 0 } });
  });

  it('a number listed on the do-not-call list after its claim: the call is canceled undialed, and the contact fails with the reason, never retried', async () => {
    // Prepare
    const { org, campaignId, contact } = await dialedCampaign({ retry_attempts: 2 });
    await addDncEntry(org, AddDncBody.parse({ phone: contact.phone }));
    // Act
    await placeAll(org);
    // Assess
    const [call] = await callsOf(org);
    expect(call).toMatchObject({ status: 'ended', disconnection_reason: 'canceled', started_at: null });
    expect(queued.take('call-events')).toEqual([]);
    expect(await campaignContact(org, campaignId)).toMatchObject({ status: 'failed', error_message: 'on do-not-call list', next_retry_at: null, call_session_id: call!.id });
    const campaign = await campaignOf(org, campaignId);
    expect(campaign.contact_stats).toEqual(await recountContacts(org, campaignId));
    expect(campaign.contact_stats).toMatchObject({ failed: 1, in_progress: 0, pending: 0 });
  });

  it('a call the carrier never finishes is ended by the recovery sweep, and the attempt goes back to pending for its retry', async () => {
    // Prepare: dialed, and then the carrier goes silent
    const { org, campaignId } = await dialedCampaign({ retry_attempts: 1, retry_gap_min: 30 });
    await placeAll(org);
    queued.take('call-events');
    const [placed] = await callsOf(org);
    // Act
    const summary = await runCallRecovery({ now: new Date(Date.parse(placed!.due_at!) + 1000) });
    // Assess
    // The sweep is the table's, not the organization's: calls other test files left in progress end with ours.
    expect(summary.ended).toBeGreaterThanOrEqual(1);
    const [call] = await callsOf(org);
    expect(call).toMatchObject({ status: 'ended', disconnection_reason: 'failed', error_message: expect.stringContaining('recovery sweep') });
    const cc = await campaignContact(org, campaignId);
    expect(cc).toMatchObject({ status: 'pending', attempt_count: 1, call_session_id: call!.id });
    expect(Date.parse(cc.next_retry_at!)).toBeGreaterThanOrEqual(Date.parse(call!.ended_at!) + 30 * 60_000);
    expect((await campaignOf(org, campaignId)).contact_stats).toEqual(await recountContacts(org, campaignId));
  });

  it('when the campaign outcome cannot be written as the sweep ends a call, a later sweep writes it: the contact is never left in progress', async () => {
    // Prepare
    const { org, campaignId } = await dialedCampaign({ retry_attempts: 0 });
    await placeAll(org);
    queued.take('call-events');
    const [placed] = await callsOf(org);
    const due = Date.parse(placed!.due_at!);
    failOutcomes = 1;
    try {
      // Act: the sweep ends the call, but the outcome write fails
      await expect(runCallRecovery({ now: new Date(due + 1000) })).rejects.toThrow(/could not be ended/);
      const ended = (await callsOf(org))[0]!;
      expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'failed' });
      expect(ended.finalized_at).toBeUndefined();
      expect(await campaignContact(org, campaignId)).toMatchObject({ status: 'in_progress' });
      // Within the grace period the sweep leaves it to the path that ended it; after it, the sweep finishes it.
      const early = await runCallRecovery({ now: new Date(due + 2000) });
      expect(early.ran).toBe(true);
      expect((await callsOf(org))[0]!.finalized_at).toBeUndefined();
      expect(Date.parse(ended.due_at!)).toBeGreaterThanOrEqual(Date.parse(ended.ended_at!) + FINALIZE_GRACE_MS - 5000);
      const later = await runCallRecovery({ now: new Date(Date.parse(ended.due_at!) + 1000) });
      expect(later.finalized).toBeGreaterThanOrEqual(1); // ours, and any another test file left due
    } finally {
      failOutcomes = 0;
    }
    // Assess
    const [call] = await callsOf(org);
    expect(call!.finalized_at).toEqual(expect.any(String));
    expect(call!.gsi2pk).toBeUndefined();
    expect(await campaignContact(org, campaignId)).toMatchObject({ status: 'failed', error_message: 'call failed' });
    const campaign = await campaignOf(org, campaignId);
    expect(campaign.contact_stats).toEqual(await recountContacts(org, campaignId));
    expect(campaign.contact_stats.in_progress).toBe(0);
    expect(queued.take('call-analysis')).toEqual([{ organization_id: org, call_id: call!.id }]);
  });
});

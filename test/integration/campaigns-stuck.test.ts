import { v7 as uuidv7 } from 'uuid';
import { createAgent, deleteAgent, updateAgent } from '../../shared/domain/agents/service';
import { createContact } from '../../shared/domain/contacts/service';
import { importPhoneNumber } from '../../shared/domain/phone-numbers/service';
import { ImportBody } from '../../shared/domain/phone-numbers/schemas';
import { CreateCampaignBody } from '../../shared/domain/campaigns/schemas';
import { cancelCampaign, createCampaign, getCampaign, listCampaignContacts, startCampaign } from '../../shared/domain/campaigns/service';
import { dispatchCampaign } from '../../shared/domain/campaigns/engine';
import { LEASE_MS, recountContacts } from '../../shared/domain/campaigns/model';
import type { CampaignCallRequest } from '../../shared/domain/campaigns/dialer';
import { tryNormalizeE164 } from '../../shared/domain/common/phone';
import { keys } from '../../shared/db/keys';
import { getItem, queryAll, transact } from '../../shared/db/store';
import { updateWrite } from '../../shared/db/update';
import { ValidationError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { deliver, installTestEngine, TestDialer } from '../support/campaign-dialer';
import { installCampaignDialer } from '../../shared/domain/campaigns/dialer';

logger.setLogLevel('SILENT');

/**
 * Campaigns that can no longer dial, or cannot dial for a moment, against DynamoDB Local through
 * the real dispatch job under a manual clock: the claim of a contact is undone for every attempt,
 * a lasting failure pauses the campaign without harming a contact, a passing one makes the contact
 * due again after a back-off, and a cancel leaves no contact in progress without a call.
 */
const REAL = ['nextTick', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'hrtime', 'performance'] as const;
const clock = {
  set(at: string | number) { jest.setSystemTime(new Date(at)); },
  advance(ms: number) { jest.setSystemTime(new Date(Date.now() + ms)); },
};
beforeEach(() => jest.useFakeTimers({ now: new Date('2031-03-05T10:00:00.000Z'), doNotFake: [...REAL] })); // a Wednesday
afterEach(() => jest.useRealTimers());

/** The test dialer, which can also refuse placements (`refuse`) or run something first (`before`). */
class FlakyDialer extends TestDialer {
  refuse = 0;
  before?: (input: CampaignCallRequest) => Promise<void>;
  private held: ((err: Error) => void)[] = [];
  holdNext = false;
  override async placeCampaignCall(input: CampaignCallRequest): Promise<{ callId: string }> {
    if (this.before) await this.before(input);
    if (this.holdNext) {
      this.holdNext = false;
      this.invocations.push(input);
      return new Promise((_, reject) => this.held.push(reject));
    }
    if (this.refuse > 0) {
      this.refuse--;
      this.invocations.push(input);
      throw new Error('ProvisionedThroughputExceededException');
    }
    return super.placeCampaignCall(input);
  }
  /** The held placement fails now. */
  failHeld(): void {
    for (const reject of this.held.splice(0)) reject(new Error('the dial failed late'));
  }
}

let engine: ReturnType<typeof installTestEngine>;
let dialer: FlakyDialer;
beforeEach(() => {
  engine = installTestEngine();
  dialer = new FlakyDialer();
  installCampaignDialer(dialer);
});

const randomPhone = (prefix: string) => {
  for (;;) {
    const n = tryNormalizeE164(`${prefix}${Math.floor(2_000_000 + Math.random() * 7_000_000)}`);
    if (n) return n;
  }
};
const ALWAYS = { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC' };

/** One agent, one number, `count` contacts and a campaign with retries, started and dispatched once. */
async function started(count = 1, schedule: Record<string, unknown> = {}) {
  const org = uuidv7();
  const agent = await createAgent(org, { name: 'Caller' } as never);
  const number = await importPhoneNumber(org, ImportBody.parse({ phone: randomPhone('+1415'), type: 'pstn' }));
  const contacts = [];
  for (let i = 0; i < count; i++) contacts.push(await createContact(org, { first_name: `C${i}`, phone: randomPhone('+1646') }));
  const campaign = await createCampaign(org, CreateCampaignBody.parse({
    name: 'Spring', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: contacts.map((c) => c.id),
    schedule: { ...ALWAYS, max_concurrent: 1, retry_attempts: 2, retry_gap_min: 30, ...schedule },
  }));
  await startCampaign(org, campaign.id);
  await drain();
  return { org, agent, number, contacts, campaignId: campaign.id };
}

async function drain() {
  for (let i = 0; i < 50; i++) {
    const bodies = engine.queued.take('campaign-dispatch');
    if (!bodies.length) return;
    await deliver('functions/jobs/campaign-dispatch.ts', bodies);
  }
}

const contactsOf = async (org: string, campaignId: string) => (await listCampaignContacts(org, campaignId, { limit: 100, offset: 0 })).items;

async function eventsOf(org: string) {
  const out: { type: string; data: Record<string, unknown> }[] = [];
  for await (const e of queryAll<{ body: string }>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: 'EVENT#' })) out.push(JSON.parse(e.body));
  return out;
}

/** The first attempt ends busy; the clock moves to the retry's due time. */
async function firstAttemptBusy(org: string) {
  const endedAt = new Date();
  await dialer.end(dialer.calls[0]!, { answered: false, disconnectionReason: 'busy', durationSec: 0 }, endedAt);
  engine.queued.take('campaign-dispatch');
  clock.set(endedAt.getTime() + 30 * 60_000);
}

async function expectExactCounters(org: string, campaignId: string) {
  const campaign = await getCampaign(org, campaignId);
  expect(campaign.contact_stats).toEqual(await recountContacts(org, campaignId));
  return campaign;
}

describe('a retry whose placement fails', () => {
  it('is undone for the retry too (not only the first attempt): pending again at its attempt count, due after a back-off that doubles, then dialed', async () => {
    // Prepare
    const { org, campaignId } = await started();
    await firstAttemptBusy(org);
    dialer.refuse = 2;
    // Act: the retry's placement fails twice in a row (a passing failure: the line is fine)
    const failedAt = Date.now();
    await dispatchCampaign(org, campaignId);
    // Assess
    let [cc] = await contactsOf(org, campaignId);
    expect(cc).toMatchObject({ status: 'pending', attempt_count: 1, next_retry_at: new Date(failedAt + 60_000).toISOString() });
    expect(await expectExactCounters(org, campaignId)).toMatchObject({ status: 'running', contact_stats: { pending: 1, in_progress: 0, contacted: 1 } });
    clock.advance(59_000);
    await dispatchCampaign(org, campaignId);
    expect(dialer.invocations).toHaveLength(2); // not due yet: the first back-off is a minute
    clock.advance(1000);
    await dispatchCampaign(org, campaignId);
    [cc] = await contactsOf(org, campaignId);
    expect(cc).toMatchObject({ status: 'pending', attempt_count: 1, next_retry_at: new Date(Date.now() + 120_000).toISOString() });
    clock.advance(120_000);
    await dispatchCampaign(org, campaignId);
    // Assess: the third try places attempt 2
    [cc] = await contactsOf(org, campaignId);
    expect(cc).toMatchObject({ status: 'in_progress', attempt_count: 2 });
    expect(dialer.calls.map((c) => c.attempt)).toEqual([1, 2]);
    expect(await getItem(keys.campaignContact(org, campaignId, cc!.id))).toMatchObject({ dial_failures: 0 });
    await dialer.end(dialer.calls[1]!);
    expect(await expectExactCounters(org, campaignId)).toMatchObject({ status: 'completed', contact_stats: { successful: 1, in_progress: 0 } });
  });
});

describe('a campaign that can no longer dial', () => {
  it.each([
    ['agent_deleted', async (w: { org: string; agent: { id: string } }) => deleteAgent(w.org, w.agent.id)],
    ['agent_inactive', async (w: { org: string; agent: { id: string } }) => void (await updateAgent(w.org, w.agent.id, { status: 'AGENT_STATUS_INACTIVE' } as never))],
    ['number_inactive', async (w: { org: string; number: { id: string } }) => {
      // The carrier took the number back (a release here is refused while a campaign uses it).
      await transact([updateWrite(keys.phoneNumber(w.org, w.number.id), { set: { status: 'released' } })]);
    }],
  ] as const)('at the retry (%s): pauses itself with the reason and a campaign.paused event; no contact is claimed or harmed', async (reason, breakLine) => {
    // Prepare: two contacts, the first busy at its first attempt, the second waiting its turn
    const w = await started(2);
    await firstAttemptBusy(w.org);
    await (breakLine as (w: unknown) => Promise<void>)(w);
    const before = await contactsOf(w.org, w.campaignId);
    // Act: the dispatch at the retry's due time
    await dispatchCampaign(w.org, w.campaignId);
    await drain();
    // Assess
    const campaign = await expectExactCounters(w.org, w.campaignId);
    expect(campaign).toMatchObject({ status: 'paused', execution_status: 'idle', pause_reason: reason, contact_stats: { pending: 2, in_progress: 0, failed: 0 } });
    expect(dialer.invocations).toHaveLength(1);
    const after = await contactsOf(w.org, w.campaignId);
    expect(after.map((c) => [c.status, c.attempt_count, c.error_message])).toEqual(before.map((c) => [c.status, c.attempt_count, c.error_message]));
    const paused = (await eventsOf(w.org)).filter((e) => e.type === 'campaign.paused');
    expect(paused).toHaveLength(1);
    expect(paused[0]!.data).toMatchObject({ id: w.campaignId, status: 'paused', pause_reason: reason });
    // A later tick changes nothing; a start once repaired resumes and clears the reason
    clock.advance(60_000);
    await dispatchCampaign(w.org, w.campaignId);
    expect(dialer.invocations).toHaveLength(1);
  });

  it('when the line breaks between the check and the dial (the dialer refuses), the claim is undone unharmed and the campaign pauses; a resume once repaired dials again', async () => {
    // Prepare
    const w = await started(1);
    await firstAttemptBusy(w.org);
    dialer.before = async (input) => {
      dialer.before = undefined;
      await updateAgent(w.org, input.agentId, { status: 'AGENT_STATUS_INACTIVE' } as never);
      throw new ValidationError('Validation failed: agent_id is not active', [{ path: 'agent_id', message: 'is not active' }]);
    };
    // Act
    await dispatchCampaign(w.org, w.campaignId);
    // Assess
    const [cc] = await contactsOf(w.org, w.campaignId);
    expect(cc).toMatchObject({ status: 'pending', attempt_count: 1, error_message: '' });
    expect(await expectExactCounters(w.org, w.campaignId)).toMatchObject({ status: 'paused', pause_reason: 'agent_inactive', contact_stats: { pending: 1, in_progress: 0, contacted: 1 } });
    // Repaired and resumed: dialed at once, the reason cleared
    await updateAgent(w.org, w.agent.id, { status: 'AGENT_STATUS_ACTIVE' } as never);
    const resumed = await startCampaign(w.org, w.campaignId);
    expect(resumed).toMatchObject({ status: 'running', pause_reason: null });
    await drain();
    expect(dialer.calls.map((c) => c.attempt)).toEqual([1, 2]);
  });
});

describe('cancel', () => {
  it('a placement that fails after the cancel fails its contact "campaign cancelled": none left pending or in progress', async () => {
    // Prepare: the retry's placement is slow, and fails after the cancel
    const w = await started(1);
    await firstAttemptBusy(w.org);
    dialer.holdNext = true;
    const dispatch = dispatchCampaign(w.org, w.campaignId);
    for (let i = 0; i < 200 && dialer.invocations.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    // Act
    await cancelCampaign(w.org, w.campaignId);
    dialer.failHeld();
    await dispatch;
    await drain();
    // Assess
    const [cc] = await contactsOf(w.org, w.campaignId);
    expect(cc).toMatchObject({ status: 'failed', error_message: 'campaign cancelled', attempt_count: 1 });
    const campaign = await expectExactCounters(w.org, w.campaignId);
    expect(campaign).toMatchObject({ status: 'completed', execution_status: 'cancelled', contact_stats: { pending: 0, in_progress: 0, failed: 1 } });
  });

  it('a claim whose worker died is failed by the next dispatch of the cancelled campaign, not placed, and the campaign leaves the engine\'s index', async () => {
    // Prepare: the placement never answers (the worker died after its claim)
    const w = await started(1);
    await firstAttemptBusy(w.org);
    dialer.holdNext = true;
    void dispatchCampaign(w.org, w.campaignId);
    for (let i = 0; i < 200 && dialer.invocations.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await cancelCampaign(w.org, w.campaignId);
    expect(await getCampaign(w.org, w.campaignId)).toMatchObject({ contact_stats: { in_progress: 1 } });
    // Act: the lease runs out; the tick's dispatch comes
    clock.advance(LEASE_MS + 1000);
    await dispatchCampaign(w.org, w.campaignId);
    // Assess
    const [cc] = await contactsOf(w.org, w.campaignId);
    expect(cc).toMatchObject({ status: 'failed', error_message: 'campaign cancelled' });
    expect(await expectExactCounters(w.org, w.campaignId)).toMatchObject({ contact_stats: { in_progress: 0, pending: 0, failed: 1 } });
    expect(dialer.calls).toHaveLength(1);
    await dispatchCampaign(w.org, w.campaignId);
    expect(await getItem(keys.campaign(w.org, w.campaignId))).not.toHaveProperty('gsi2pk');
  });
});

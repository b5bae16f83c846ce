import { v7 as uuidv7 } from 'uuid';
import { createAgent } from '../../shared/domain/agents/service';
import { createContact } from '../../shared/domain/contacts/service';
import { importPhoneNumber } from '../../shared/domain/phone-numbers/service';
import { ImportBody } from '../../shared/domain/phone-numbers/schemas';
import { CreateCampaignBody } from '../../shared/domain/campaigns/schemas';
import { createCampaign, startCampaign } from '../../shared/domain/campaigns/service';
import { LEASE_MS } from '../../shared/domain/campaigns/model';
import type { CampaignCallRequest } from '../../shared/domain/campaigns/dialer';
import { installCampaignDialer } from '../../shared/domain/campaigns/dialer';
import { tryNormalizeE164 } from '../../shared/domain/common/phone';
import { db } from '../../shared/db/client';
import { resetConfig } from '../../shared/config';
import { ensureTable } from '../../shared/local/table';
import { logger } from '../../shared/logger';
import { deliver, installTestEngine, TestDialer } from '../support/campaign-dialer';

logger.setLogLevel('SILENT');

/**
 * The campaign tick's marker (issue 25.12), against DynamoDB Local through the real tick and
 * dispatch jobs under a manual clock: a minute with nothing a dispatch could act on (a closed
 * window, a retry not due yet) costs the tick one GetItem and queues nothing; the window's
 * opening, a retry's due time and a dead worker's lease each bring the tick back on time.
 * The marker is a table-wide item, so this file has a table of its own (campaigns of other test
 * files, on clocks of their own, cannot move it); every test leaves it a true lower bound, so they may run in any order.
 */
const TABLE = `vap-test-campaign-tick-${process.pid}`;
beforeAll(async () => {
  await ensureTable(process.env.DYNAMODB_ENDPOINT!, TABLE);
  process.env.TABLE_NAME = TABLE;
  resetConfig();
});
const REAL = ['nextTick', 'setImmediate', 'clearImmediate', 'setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'queueMicrotask', 'hrtime', 'performance'] as const;
const clock = {
  set(at: string | number) { jest.setSystemTime(new Date(at)); },
  advance(ms: number) { jest.setSystemTime(new Date(Date.now() + ms)); },
};
afterEach(() => jest.useRealTimers());

/** The test dialer; `holdNext` makes the next placement never answer (its worker died after the claim). */
class HoldingDialer extends TestDialer {
  holdNext = false;
  private reached?: () => void;
  /** Resolves when the held placement has been asked for. */
  held = new Promise<void>((resolve) => (this.reached = resolve));
  override async placeCampaignCall(input: CampaignCallRequest): Promise<{ callId: string }> {
    if (this.holdNext) {
      this.holdNext = false;
      this.invocations.push(input);
      this.reached!();
      return new Promise(() => undefined);
    }
    return super.placeCampaignCall(input);
  }
}

/** This test's campaigns. */
let campaigns = new Set<string>();
beforeEach(() => (campaigns = new Set()));
let engine: ReturnType<typeof installTestEngine>;
let dialer: HoldingDialer;
beforeEach(() => {
  engine = installTestEngine();
  dialer = new HoldingDialer();
  installCampaignDialer(dialer);
});

const randomPhone = (prefix: string) => {
  for (;;) {
    const n = tryNormalizeE164(`${prefix}${Math.floor(2_000_000 + Math.random() * 7_000_000)}`);
    if (n) return n;
  }
};

async function started(count: number, schedule: Record<string, unknown>) {
  const org = uuidv7();
  const agent = await createAgent(org, { name: 'Caller' } as never);
  const number = await importPhoneNumber(org, ImportBody.parse({ phone: randomPhone('+1415'), type: 'pstn' }));
  const contacts = [];
  for (let i = 0; i < count; i++) contacts.push(await createContact(org, { first_name: `C${i}`, phone: randomPhone('+1646') }));
  const campaign = await createCampaign(org, CreateCampaignBody.parse({
    name: 'Spring', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: contacts.map((c) => c.id),
    schedule: { max_concurrent: 1, ...schedule },
  }));
  campaigns.add(campaign.id);
  await startCampaign(org, campaign.id);
  await drain();
  return { org, campaignId: campaign.id };
}

/** Delivers queued dispatches (the start's, the outcomes', the tick's) until none is left. */
async function drain() {
  for (let i = 0; i < 50; i++) {
    const bodies = engine.queued.take('campaign-dispatch');
    if (!bodies.length) return;
    await deliver('functions/jobs/campaign-dispatch.ts', bodies);
  }
}

describe('the campaign tick', () => {
  it('costs one GetItem a minute while a one-zone window is closed, and dials at its opening', async () => {
    // Prepare: a weekday window in UTC, started at 08:40 (the start's dispatch finds it closed)
    jest.useFakeTimers({ now: new Date('2031-03-05T08:40:00.000Z'), doNotFake: [...REAL] }); // a Wednesday
    await started(1, { window_start: '09:00', window_end: '17:00', window_days: [1, 2, 3, 4, 5], timezone: 'UTC', use_contact_timezone: false, retry_attempts: 0 });
    expect(dialer.calls).toHaveLength(0);
    // Act: the first tick runs (the start lowered the marker) and learns the opening; the next ones wait for it
    clock.set('2031-03-05T08:41:00.000Z');
    const first = await tickAndDispatch();
    const quiet = [];
    for (const at of ['2031-03-05T08:42:00.000Z', '2031-03-05T08:59:00.000Z']) {
      clock.set(at);
      quiet.push(await tickAndDispatch());
    }
    clock.set('2031-03-05T09:00:00.000Z');
    const opening = await tickAndDispatch();
    // Assess
    expect(first.queued).toBe(1);
    for (const q of quiet) expect(q).toEqual({ requests: ['GetCommand'], queued: 0 });
    expect(opening.queued).toBe(1);
    expect(dialer.calls).toHaveLength(1);
  });

  it('comes back for a retry when it is due, and for the lease of a worker that died after its claim', async () => {
    // Prepare: always open; the first attempt ends busy, the retry due 30 minutes later
    jest.useFakeTimers({ now: new Date('2031-04-02T10:00:00.000Z'), doNotFake: [...REAL] });
    const w = await started(1, { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', retry_attempts: 1, retry_gap_min: 30 });
    expect(dialer.calls).toHaveLength(1);
    await dialer.end(dialer.calls[0]!, { answered: false, disconnectionReason: 'busy', durationSec: 0 }, new Date());
    await drain();
    clock.advance(60_000);
    await tickAndDispatch();
    clock.advance(10 * 60_000);
    const early = await tickAndDispatch();
    expect(early).toEqual({ requests: ['GetCommand'], queued: 0 });
    // Act: at the retry's due time the tick's dispatch claims it, and its placement never answers
    clock.set('2031-04-02T10:30:00.000Z');
    dialer.holdNext = true;
    const due = await tickAndDispatch({ hold: true });
    await dialer.held;
    expect(due.queued).toBe(1);
    expect(dialer.invocations).toHaveLength(2);
    clock.advance(LEASE_MS / 2);
    const leased = await tickAndDispatch();
    clock.advance(LEASE_MS / 2 + 1000);
    const expired = await tickAndDispatch();
    // Assess: quiet while the lease runs, then the tick's dispatch places the same attempt again
    expect(leased).toEqual({ requests: ['GetCommand'], queued: 0 });
    expect(expired.queued).toBe(1);
    expect(dialer.invocations).toHaveLength(3);
    expect(dialer.invocations[2]).toMatchObject({ campaignId: w.campaignId, attempt: 2 });
  });
});

/** A tick through its job's handler (with the DynamoDB requests the tick itself made), then the dispatches it queued. */
async function tickAndDispatch(options: { hold?: boolean } = {}): Promise<{ requests: string[]; queued: number }> {
  const client = db();
  const send = client.send.bind(client);
  const requests: string[] = [];
  const spy = jest.spyOn(client, 'send').mockImplementation(((command: { constructor: { name: string } }, ...rest: unknown[]) => {
    requests.push(command.constructor.name);
    return (send as (...a: unknown[]) => Promise<unknown>)(command, ...rest);
  }) as never);
  try {
    const { handler } = await import('../../functions/jobs/campaign-tick');
    await handler();
  } finally {
    spy.mockRestore();
  }
  const bodies = engine.queued.take('campaign-dispatch');
  if (options.hold) {
    // Only this test's dispatch is left running (its placement never answers): another campaign's, still in the
    // engine's index, runs to its end now, so its reads cannot fall into the next tick's count.
    const ours = (bodies as { campaign_id: string }[]).filter((b) => campaigns.has(b.campaign_id));
    await deliver('functions/jobs/campaign-dispatch.ts', (bodies as { campaign_id: string }[]).filter((b) => !campaigns.has(b.campaign_id)));
    void deliver('functions/jobs/campaign-dispatch.ts', ours);
  } else {
    await deliver('functions/jobs/campaign-dispatch.ts', bodies);
    await drain();
  }
  // Dispatches of other tests' campaigns (still in the engine's index) are not this test's.
  return { requests, queued: (bodies as { campaign_id: string }[]).filter((b) => campaigns.has(b.campaign_id)).length };
}

/**
 * `npm run simulate -- --contacts N --days D --out report.json [--seed S] [--concurrent C]`
 *
 * A week (or D days) of one campaign on virtual time: the local platform (DynamoDB Local, the
 * queue runner, the scheduler and the REAL job handlers: campaign-tick, campaign-dispatch) runs
 * on a ManualClock that every domain rule reads (shared/clock.ts), and the loop below jumps the
 * clock from one due timer to the next. The campaign dials through the engine's dialer port; a
 * simulated carrier chooses each call's outcome and length at random (seeded), stores the call
 * session, and when the call ends reports it through the engine's own `recordCampaignCallOutcome`.
 *
 * Scenario: contacts spread over six zones with `use_contact_timezone`, starting Thursday
 * 2026-10-29 so America/* zones leave daylight-saving time within the week (2026-11-01), a
 * blackout date (2026-11-03), weekdays 09:00–17:00, two retries twelve hours apart (so they cross nights, the weekend, the DST change and the blackout), `max_concurrent` > 1.
 *
 * The report is a recount from what is stored (call sessions, campaign contacts), never the
 * engine's counters: calls outside the window in the zone that applied, peak concurrency from
 * the sessions' start and end times, retries before the gap, a contact dialed while already in
 * a call, counters that disagree with the recount, and whether the campaign completed.
 *
 * The carrier sits behind `installCampaignDialer(new SimulatedCarrier(...))`: when the calls
 * service is wired in (its dialer the default, its call-place/call-events jobs on this same queue
 * runner and clock), that one line goes and the report reads the calls' own sessions.
 */
import { writeFileSync } from 'node:fs';
import { v5 as uuidv5, v7 as uuidv7 } from 'uuid';
import { seededRandom } from '../shared/adapters/seeded-random';
import { keys } from '../shared/db/keys';
import { getItem, queryAll, transact } from '../shared/db/store';
import { putMany } from '../shared/db/filtered-query';
import { updateWrite } from '../shared/db/update';
import { clockNow } from '../shared/clock';
import { createAgent } from '../shared/domain/agents/service';
import { importPhoneNumber } from '../shared/domain/phone-numbers/service';
import { ImportBody } from '../shared/domain/phone-numbers/schemas';
import { CreateCampaignBody } from '../shared/domain/campaigns/schemas';
import { addCampaignContacts, createCampaign, startCampaign } from '../shared/domain/campaigns/service';
import { installCampaignDialer, type CampaignCallOutcome, type CampaignCallRequest, type CampaignDialer } from '../shared/domain/campaigns/dialer';
import { recordCampaignCallOutcome } from '../shared/domain/campaigns/engine';
import { recountContacts, type CampaignContactItem, type CampaignItem } from '../shared/domain/campaigns/model';
import { isOpen } from '../shared/domain/campaigns/window';
import { ManualClock } from '../shared/local/clock';
import { startPlatform } from '../shared/local/platform';

export interface SimulationOptions {
  contacts: number;
  days: number;
  seed?: number;
  maxConcurrent?: number;
  start?: string;
}

export interface SimulationReport {
  contacts: number;
  days: number;
  seed: number;
  start: string;
  zones: string[];
  blackout_dates: string[];
  calls_placed: number;
  calls_outside_window: number;
  max_concurrent_seen: number;
  max_concurrent_allowed: number;
  retries_before_gap: number;
  duplicate_dials: number;
  counter_mismatches: number;
  completed: boolean;
  completed_at: string | null;
  contacts_by_status: Record<string, number>;
  wall_seconds: number;
  peak_rss_mb: number;
}

const ZONES = ['America/New_York', 'America/Chicago', 'America/Los_Angeles', 'Europe/London', 'Europe/Berlin', 'Asia/Tokyo'];
const SESSION_NS = '6f1b3a52-5f0e-4b8e-9d4c-2a7f6c1e9b10';

interface SessionItem {
  pk: string;
  sk: string;
  id: string;
  campaign_id: string;
  campaign_contact_id: string;
  attempt: number;
  to_phone_number: string;
  status: 'in_progress' | 'ended';
  started_at: string;
  ended_at: string | null;
  disconnection_reason: CampaignCallOutcome['disconnectionReason'] | null;
}

const sessionPartition = (orgId: string) => `${keys.partition(orgId)}#SIMCALLS`;

/**
 * The simulated carrier behind the dialer port: stores a call session (idempotent per campaign
 * contact and attempt, as the port requires), picks the outcome and the length, and ends the call
 * on the clock through the engine's outcome function.
 */
class SimulatedCarrier implements CampaignDialer {
  private readonly random: () => number;
  constructor(private readonly clock: ManualClock, seed: number, private readonly track: (work: Promise<unknown>) => void) {
    this.random = seededRandom(`carrier-${seed}`);
  }

  async placeCampaignCall(input: CampaignCallRequest): Promise<{ callId: string }> {
    const id = uuidv5(`${input.campaignContactId}#${input.attempt}`, SESSION_NS);
    const key = { pk: sessionPartition(input.organizationId), sk: `CALL#${id}` };
    const session: SessionItem = {
      ...key, id, campaign_id: input.campaignId, campaign_contact_id: input.campaignContactId, attempt: input.attempt,
      to_phone_number: input.toPhoneNumber, status: 'in_progress', started_at: clockNow().toISOString(), ended_at: null, disconnection_reason: null,
    };
    try {
      await transact([{ Put: { TableName: process.env.TABLE_NAME!, Item: session, ConditionExpression: 'attribute_not_exists(pk)' } }]);
    } catch {
      return { callId: id }; // placed before (a redelivered dispatch): the same call, nothing new
    }
    const r = this.random();
    const [reason, seconds]: [CampaignCallOutcome['disconnectionReason'], number] =
      r < 0.55 ? ['completed', 30 + Math.floor(this.random() * 270)]
        : r < 0.75 ? ['no_answer', 30]
          : r < 0.85 ? ['busy', 5]
            : r < 0.95 ? ['voicemail', 20 + Math.floor(this.random() * 20)]
              : ['failed', 2];
    this.clock.setTimeout(() => this.track(this.end(input, key, id, reason, reason === 'completed' ? seconds : 0)), seconds * 1000);
    return { callId: id };
  }

  private async end(input: CampaignCallRequest, key: { pk: string; sk: string }, id: string, reason: CampaignCallOutcome['disconnectionReason'], durationSec: number) {
    const endedAt = clockNow().toISOString();
    await transact([updateWrite(key, { set: { status: 'ended', ended_at: endedAt, disconnection_reason: reason } })]);
    await recordCampaignCallOutcome(input.organizationId, input.campaignId, input.campaignContactId, input.attempt, {
      callId: id, endedAt, durationSec, answered: reason === 'completed', disconnectionReason: reason,
    });
  }
}

export async function simulate(options: SimulationOptions): Promise<SimulationReport> {
  const wallStart = performance.now();
  let peakRss = process.memoryUsage().rss;
  const seed = options.seed ?? 1;
  const start = options.start ?? '2026-10-29T00:00:00.000Z';
  const clock = new ManualClock(Date.parse(start));
  // One scheduled "minute" of the tick is 5 minutes of virtual time: the tick only opens windows
  // and recovers; calls follow one another through their outcomes.
  const platform = await startPlatform({
    inMemory: true, clock, tickSeconds: 300,
    env: { LOG_LEVEL: 'SILENT', POWERTOOLS_LOG_LEVEL: 'ERROR' }, log: () => undefined,
  });
  const work = new Set<Promise<unknown>>();
  const failures: unknown[] = [];
  const track = (p: Promise<unknown>) => {
    const w = p.catch((err) => failures.push(err)).finally(() => work.delete(w));
    work.add(w);
  };
  installCampaignDialer(new SimulatedCarrier(clock, seed, track));
  const random = seededRandom(`contacts-${seed}`);
  try {
    const orgId = platform.keys[0]!.organizationId;
    const agent = await createAgent(orgId, { name: 'Simulated caller' } as never);
    const number = await importPhoneNumber(orgId, ImportBody.parse({ phone: '+14155550142', type: 'pstn' }));
    // Contacts straight to the table (setup, not what is simulated), each in one of the zones.
    const ids: string[] = [];
    const items: Record<string, unknown>[] = [];
    for (let i = 0; i < options.contacts; i++) {
      const id = uuidv7();
      ids.push(id);
      items.push({
        ...keys.contact(orgId, id), entity: 'CONTACT', version: 1, id, first_name: `Sim${i}`, last_name: '', email: '', company: '', metadata: {},
        phone: `+1646${String(2_000_000 + i).padStart(7, '0')}`, timezone: ZONES[Math.floor(random() * ZONES.length)], opt_out: false, tags: [],
        created_at: start, updated_at: start,
      });
    }
    await putMany(items, { parallel: 8 });
    const schedule = {
      window_start: '09:00', window_end: '17:00', window_days: [1, 2, 3, 4, 5], timezone: 'America/New_York', use_contact_timezone: true,
      blackout_dates: ['2026-11-03'], max_concurrent: options.maxConcurrent ?? 10, retry_attempts: 2, retry_gap_min: 720,
    };
    const campaign = await createCampaign(orgId, CreateCampaignBody.parse({
      name: 'Simulated week', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: ids.slice(0, 10_000), schedule,
    }));
    for (let i = 10_000; i < ids.length; i += 10_000) await addCampaignContacts(orgId, campaign.id, ids.slice(i, i + 10_000));
    await startCampaign(orgId, campaign.id);

    const end = clock.now() + options.days * 86_400_000;
    const settle = async () => {
      for (;;) {
        await platform.queue.drain();
        while (Object.values(platform.scheduler.stats()).some((s) => s.running)) await new Promise((r) => setTimeout(r, 2));
        if (work.size) {
          await Promise.all([...work]);
          continue;
        }
        const stats = Object.values(platform.queue.stats());
        if (stats.every((q) => q.visible === 0 && q.inFlight === 0)) return;
      }
    };
    let completed = false;
    let lastCheck = 0;
    for (;;) {
      await settle();
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      if (clock.now() - lastCheck >= 300_000) {
        lastCheck = clock.now();
        completed = (await getItem<CampaignItem>(keys.campaign(orgId, campaign.id)))?.status === 'completed';
        if (completed) break;
      }
      const next = clock.nextDueAt();
      if (next === undefined || next > end) break;
      clock.advance(Math.max(0, next - clock.now()));
    }
    await settle();
    if (failures.length) throw failures[0];
    const report = await recount(orgId, campaign.id, schedule.max_concurrent);
    return {
      contacts: options.contacts, days: options.days, seed, start, zones: ZONES, blackout_dates: schedule.blackout_dates, ...report,
      wall_seconds: Math.round((performance.now() - wallStart) / 100) / 10,
      peak_rss_mb: Math.round(Math.max(peakRss, process.memoryUsage().rss) / 1024 / 1024),
    };
  } finally {
    installCampaignDialer(undefined);
    await platform.stop();
  }
}

/** The report's figures, from the stored sessions and campaign contacts only. */
async function recount(orgId: string, campaignId: string, allowed: number) {
  const campaign = (await getItem<CampaignItem>(keys.campaign(orgId, campaignId)))!;
  const sessions: SessionItem[] = [];
  for await (const s of queryAll<SessionItem>({ pkName: 'pk', pkValue: sessionPartition(orgId), skName: 'sk', skPrefix: 'CALL#' })) {
    if (s.campaign_id === campaignId) sessions.push(s);
  }
  const contacts = new Map<string, CampaignContactItem>();
  for await (const cc of queryAll<CampaignContactItem>({ pkName: 'pk', pkValue: keys.campaignPartition(orgId, campaignId), skName: 'sk', skPrefix: 'CC#' })) contacts.set(cc.id, cc);

  let outside = 0;
  for (const s of sessions) {
    const cc = contacts.get(s.campaign_contact_id);
    if (!cc || !isOpen(campaign.schedule, new Date(s.started_at), cc.timezone)) outside++;
  }
  // Peak concurrency: a sweep over start (+1) and end (-1) instants; an end at the same instant as a start comes first.
  const edges = sessions.flatMap((s) => [[Date.parse(s.started_at), 1], [s.ended_at ? Date.parse(s.ended_at) : Infinity, -1]] as [number, number][]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let live = 0;
  let seen = 0;
  for (const [, d] of edges) seen = Math.max(seen, (live += d));

  let retriesBeforeGap = 0;
  let duplicateDials = 0;
  let mismatches = 0;
  const byContact = new Map<string, SessionItem[]>();
  for (const s of sessions) byContact.set(s.campaign_contact_id, [...(byContact.get(s.campaign_contact_id) ?? []), s]);
  for (const [ccId, list] of byContact) {
    list.sort((a, b) => a.started_at.localeCompare(b.started_at));
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1]!;
      const cur = list[i]!;
      if (!prev.ended_at || cur.started_at < prev.ended_at || cur.attempt === prev.attempt) duplicateDials++;
      else if (Date.parse(cur.started_at) - Date.parse(prev.ended_at) < campaign.schedule.retry_gap_min * 60_000) retriesBeforeGap++;
    }
    const cc = contacts.get(ccId);
    if (!cc || cc.attempt_count !== list.length) mismatches++;
  }
  for (const cc of contacts.values()) if (!byContact.has(cc.id) && cc.attempt_count !== 0) mismatches++;
  const stats = await recountContacts(orgId, campaignId);
  for (const [k, v] of Object.entries(stats)) if (campaign.contact_stats[k as keyof typeof stats] !== v) mismatches++;
  const byStatus: Record<string, number> = {};
  for (const cc of contacts.values()) byStatus[cc.status] = (byStatus[cc.status] ?? 0) + 1;
  return {
    calls_placed: sessions.length,
    calls_outside_window: outside,
    max_concurrent_seen: seen,
    max_concurrent_allowed: allowed,
    retries_before_gap: retriesBeforeGap,
    duplicate_dials: duplicateDials,
    counter_mismatches: mismatches,
    completed: campaign.status === 'completed' && campaign.execution_status === 'done',
    completed_at: campaign.completed_at,
    contacts_by_status: byStatus,
  };
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (require.main === module) {
  const options: SimulationOptions = {
    contacts: Number(arg('contacts') ?? 2000),
    days: Number(arg('days') ?? 7),
    seed: Number(arg('seed') ?? 1),
    ...(arg('concurrent') ? { maxConcurrent: Number(arg('concurrent')) } : {}),
  };
  const out = arg('out');
  simulate(options).then(
    (report) => {
      const json = JSON.stringify(report, null, 2);
      if (out) writeFileSync(out, `${json}\n`);
      console.log(json);
      process.exit(0);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}

/**
 * `npm run simulate -- --contacts N --days D --out report.json [--seed S] [--concurrent C] [--tick-seconds T] [--faults LOCAL_FAULTS] [--progress]`
 *
 * A week (or D days) of one campaign on virtual time: the local platform (DynamoDB Local, the
 * queue runner, the scheduler and the REAL job handlers: campaign-tick, campaign-dispatch,
 * call-place, call-events, call-analysis, event-fanout) runs on a ManualClock that every domain
 * rule reads (shared/clock.ts), and the loop below jumps the clock from one due timer to the next.
 * The campaign dials through the calls service, as deployed; the simulated carrier draws each
 * call's outcome and length at random, seeded (SIMULATED_CALL_RANDOM_SEED), and its status events
 * reach the state machine through the call-events queue with their delays on the same clock.
 * Recordings are off (SIMULATED_RECORDINGS=off): a week of WAV files would be gigabytes nobody reads.
 *
 * Scenario: contacts spread over six zones with `use_contact_timezone`, starting Thursday
 * 2026-10-29 so America/* zones leave daylight-saving time within the week (2026-11-01), a
 * blackout date (2026-11-03), weekdays 09:00–17:00, two retries twelve hours apart (so they cross
 * nights, the weekend, the DST change and the blackout), `max_concurrent` > 1.
 *
 * The report is a recount from what is stored (the call sessions and the campaign contacts),
 * never the engine's counters: calls dialed outside the window in the zone that applied, peak
 * concurrency from the calls' dial and end times, retries dialed before the gap, a contact dialed
 * while already in a call (or one attempt dialed twice), counters that disagree with the recount,
 * and whether the campaign completed.
 */
import { writeFileSync } from 'node:fs';
import { seededRandom } from '../shared/adapters/seeded-random';
import { keys } from '../shared/db/keys';
import { getItem, queryAll } from '../shared/db/store';
import { putMany } from '../shared/db/filtered-query';
import { createAgent } from '../shared/domain/agents/service';
import { newContactItems } from '../shared/domain/contacts/service';
import type { ContactInput } from '../shared/domain/contacts/schemas';
import { importPhoneNumber } from '../shared/domain/phone-numbers/service';
import { ImportBody } from '../shared/domain/phone-numbers/schemas';
import { CreateCampaignBody } from '../shared/domain/campaigns/schemas';
import { addCampaignContacts, createCampaign, startCampaign } from '../shared/domain/campaigns/service';
import { recountContacts, type CampaignContactItem, type CampaignItem } from '../shared/domain/campaigns/model';
import { isOpen } from '../shared/domain/campaigns/window';
import type { CallItem } from '../shared/domain/calls/service';
import { ManualClock } from '../shared/local/clock';
import { installLocalFaults, parseFaults } from '../shared/local/faults';
import { startPlatform } from '../shared/local/platform';
import { simulatedDials } from '../shared/adapters/telephony/simulated';

export interface SimulationOptions {
  contacts: number;
  days: number;
  seed?: number;
  maxConcurrent?: number;
  start?: string;
  /** Virtual seconds per scheduler "minute" (default 300): how often the tick, sweeps and retries' dispatch run. */
  tickSeconds?: number;
  /** LOCAL_FAULTS for the simulated week (shared/local/faults.ts): injected once the campaign is set up, removed before the recount. */
  faults?: string;
  /** Called once a virtual hour with the virtual time and the wall seconds so far (`--progress`: to stderr). */
  progress?: (line: string) => void;
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
  calls_by_outcome: Record<string, number>;
  /** Calls the simulated carrier was asked to place: equal to calls_placed when no call was dialed twice. */
  carrier_dials: number;
  /** Faults injected by kind, when the week ran under faults. */
  faults_injected?: Record<string, number>;
  wall_seconds: number;
  peak_rss_mb: number;
}

const ZONES = ['America/New_York', 'America/Chicago', 'America/Los_Angeles', 'Europe/London', 'Europe/Berlin', 'Asia/Tokyo'];

export async function simulate(options: SimulationOptions): Promise<SimulationReport> {
  const wallStart = performance.now();
  let peakRss = process.memoryUsage().rss;
  const seed = options.seed ?? 1;
  const start = options.start ?? '2026-10-29T00:00:00.000Z';
  const clock = new ManualClock(Date.parse(start));
  // One scheduled "minute" of the tick is 5 minutes of virtual time by default: the tick only opens
  // windows, dispatches retries that came due and recovers; calls follow one another through their outcomes.
  const platform = await startPlatform({
    inMemory: true, clock, tickSeconds: options.tickSeconds ?? 300,
    env: { LOG_LEVEL: process.env.SIM_LOG_LEVEL ?? 'SILENT', POWERTOOLS_LOG_LEVEL: 'ERROR', SIMULATED_CALL_RANDOM_SEED: String(seed), SIMULATED_RECORDINGS: 'off' }, log: () => undefined,
  });
  const random = seededRandom(`contacts-${seed}`);
  try {
    const orgId = platform.keys[0]!.organizationId;
    const agent = await createAgent(orgId, { name: 'Simulated caller' } as never);
    const number = await importPhoneNumber(orgId, ImportBody.parse({ phone: '+14155550142', type: 'pstn' }));
    // Contacts straight to the table (setup, not what is simulated), stored as the contacts service
    // stores them (its item builder), each in one of the zones.
    const ids: string[] = [];
    const items: Record<string, unknown>[] = [];
    for (let i = 0; i < options.contacts; i++) {
      const { contact, items: stored } = newContactItems(orgId, {
        first_name: `Sim${i}`, phone: `+1646${String(2_000_000 + i).padStart(7, '0')}`, timezone: ZONES[Math.floor(random() * ZONES.length)],
      } as ContactInput, start);
      ids.push(contact.id);
      items.push(...stored);
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
    const faults = installLocalFaults(parseFaults(options.faults));
    const dialsBefore = simulatedDials();

    const end = clock.now() + options.days * 86_400_000;
    const settle = async () => {
      for (;;) {
        await platform.queue.drain();
        // The runs in progress, awaited (not polled): a scheduled job's run may queue more messages.
        await platform.scheduler.idle();
        const stats = Object.values(platform.queue.stats());
        if (stats.every((q) => q.visible === 0 && q.inFlight === 0)) return;
      }
    };
    let completed = false;
    let lastCheck = 0;
    for (;;) {
      await settle();
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      // Completion is read once a virtual hour (completed_at is the campaign's own; a few more idle ticks cost one GetItem each).
      if (clock.now() - lastCheck >= 3_600_000) {
        lastCheck = clock.now();
        completed = (await getItem<CampaignItem>(keys.campaign(orgId, campaign.id)))?.status === 'completed';
        options.progress?.(`${new Date(clock.now()).toISOString()} (virtual) after ${Math.round((performance.now() - wallStart) / 1000)} s`);
        if (completed) break;
      }
      const next = clock.nextDueAt();
      if (next === undefined || next > end) break;
      clock.advance(Math.max(0, next - clock.now()));
    }
    await settle();
    installLocalFaults(undefined);
    // A job that failed for good is a bug the report must not hide.
    const dead = Object.entries(platform.queue.stats()).filter(([, q]) => q.deadLetters > 0);
    if (dead.length) {
      const first = platform.queue.deadLetters(dead[0]![0])[0];
      throw new Error(`Messages went to a dead-letter queue: ${dead.map(([name, q]) => `${name} ${q.deadLetters}`).join(', ')}; the first: ${first?.body} (${first?.lastError})`);
    }
    const report = await recount(orgId, campaign.id, schedule.max_concurrent);
    return {
      contacts: options.contacts, days: options.days, seed, start, zones: ZONES, blackout_dates: schedule.blackout_dates, ...report,
      carrier_dials: simulatedDials() - dialsBefore,
      ...(faults ? { faults_injected: faults.injected() } : {}),
      wall_seconds: Math.round((performance.now() - wallStart) / 100) / 10,
      peak_rss_mb: Math.round(Math.max(peakRss, process.memoryUsage().rss) / 1024 / 1024),
    };
  } finally {
    installLocalFaults(undefined);
    await platform.stop();
  }
}

/** The report's figures, from the stored call sessions and campaign contacts only. */
async function recount(orgId: string, campaignId: string, allowed: number) {
  const campaign = (await getItem<CampaignItem>(keys.campaign(orgId, campaignId)))!;
  const calls: CallItem[] = [];
  for await (const c of queryAll<CallItem>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: 'CALL#' })) {
    if (c.campaign_id === campaignId) calls.push(c);
  }
  const contacts = new Map<string, CampaignContactItem>();
  for await (const cc of queryAll<CampaignContactItem>({ pkName: 'pk', pkValue: keys.campaignPartition(orgId, campaignId), skName: 'sk', skPrefix: 'CC#' })) contacts.set(cc.id, cc);

  // Dialed: the carrier was asked (a call canceled before dialing, e.g. do-not-call, never was).
  const dialed = calls.filter((c) => c.started_at);
  let outside = 0;
  for (const c of dialed) {
    const cc = contacts.get(c.campaign_contact_id!);
    if (!cc || !isOpen(campaign.schedule, new Date(c.started_at!), cc.timezone)) outside++;
  }
  // Peak concurrency: a sweep over dial (+1) and end (-1) instants; an end at the same instant as a dial comes first.
  const edges = dialed.flatMap((c) => [[Date.parse(c.started_at!), 1], [c.ended_at ? Date.parse(c.ended_at) : Infinity, -1]] as [number, number][]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let live = 0;
  let seen = 0;
  for (const [, d] of edges) seen = Math.max(seen, (live += d));

  let retriesBeforeGap = 0;
  let duplicateDials = 0;
  let mismatches = 0;
  const byContact = new Map<string, CallItem[]>();
  for (const c of calls) byContact.set(c.campaign_contact_id!, [...(byContact.get(c.campaign_contact_id!) ?? []), c]);
  for (const [ccId, list] of byContact) {
    const attempts = new Set(list.map((c) => c.campaign_attempt));
    if (attempts.size !== list.length) duplicateDials += list.length - attempts.size;
    const course = list.filter((c) => c.started_at).sort((a, b) => a.started_at!.localeCompare(b.started_at!));
    for (let i = 1; i < course.length; i++) {
      const prev = course[i - 1]!;
      const cur = course[i]!;
      if (!prev.ended_at || cur.started_at! < prev.ended_at) duplicateDials++;
      else if (Date.parse(cur.started_at!) - Date.parse(prev.ended_at) < campaign.schedule.retry_gap_min * 60_000) retriesBeforeGap++;
    }
    const cc = contacts.get(ccId);
    if (!cc || cc.attempt_count !== list.length) mismatches++;
  }
  for (const cc of contacts.values()) if (!byContact.has(cc.id) && cc.attempt_count !== 0) mismatches++;
  const stats = await recountContacts(orgId, campaignId);
  for (const [k, v] of Object.entries(stats)) if (campaign.contact_stats[k as keyof typeof stats] !== v) mismatches++;
  const byStatus: Record<string, number> = {};
  for (const cc of contacts.values()) byStatus[cc.status] = (byStatus[cc.status] ?? 0) + 1;
  const byOutcome: Record<string, number> = {};
  for (const c of calls) byOutcome[c.disconnection_reason ?? c.status] = (byOutcome[c.disconnection_reason ?? c.status] ?? 0) + 1;
  return {
    calls_placed: dialed.length,
    calls_outside_window: outside,
    max_concurrent_seen: seen,
    max_concurrent_allowed: allowed,
    retries_before_gap: retriesBeforeGap,
    duplicate_dials: duplicateDials,
    counter_mismatches: mismatches,
    completed: campaign.status === 'completed' && campaign.execution_status === 'done',
    completed_at: campaign.completed_at,
    contacts_by_status: byStatus,
    calls_by_outcome: byOutcome,
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
    ...(arg('tick-seconds') ? { tickSeconds: Number(arg('tick-seconds')) } : {}),
    ...(arg('faults') ? { faults: arg('faults') } : {}),
    ...(process.argv.includes('--progress') ? { progress: (line: string) => console.error(line) } : {}),
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

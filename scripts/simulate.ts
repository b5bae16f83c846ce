/**
 * `npm run simulate -- --contacts N --days D --out report.json [--seed S] [--concurrent C] [--limit L] [--inbound I] [--queue-seconds Q] [--tick-seconds T] [--faults LOCAL_FAULTS] [--progress]`
 *
 * A week (or D days) of one organization on virtual time: the local platform (DynamoDB Local, the
 * queue runner, the scheduler and the REAL job handlers: campaign-tick, campaign-dispatch,
 * call-place, call-events, call-analysis, event-fanout) runs on a ManualClock that every domain
 * rule reads (shared/clock.ts), and the loop below jumps the clock from one due timer to the next.
 * The campaigns dial through the calls service, as deployed; the simulated carrier draws each
 * call's outcome and length at random, seeded (SIMULATED_CALL_RANDOM_SEED), and its status events
 * reach the state machine through the call-events queue with their delays on the same clock.
 * Recordings are off (SIMULATED_RECORDINGS=off): a week of WAV files would be gigabytes nobody reads.
 *
 * Scenario: an organization with a concurrency limit (`--limit`, default 6: PATCH /concurrency)
 * runs two campaigns at once that share it (the contacts split between them), and receives
 * incoming calls while they run. Contacts are spread over six zones with `use_contact_timezone`,
 * starting Thursday 2026-10-29 so America/* zones leave daylight-saving time within the week
 * (2026-11-01), a blackout date (2026-11-03), weekdays 09:00–17:00, two retries twelve hours apart
 * (so they cross nights, the weekend, the DST change and the blackout), `max_concurrent` > 1.
 *
 * Incoming calls (`--inbound`) come in bursts of 1 to 1.5 × `limit` callers at random moments of New York
 * business hours on weekdays, so some find the organization full (the campaigns' calls or the
 * burst itself): each caller rings one of two numbers, one whose overflow is `queue` (hold for
 * `--queue-seconds`, default 60; a quarter of its callers hang up sooner), one whose overflow is
 * `reject`. The simulated carrier has no incoming calls, so this script plays the carrier's part
 * as Twilio's webhooks would: it asks the platform about each call (calls/inbound.ts
 * createInboundCall, as scripts/relay.ts does) and posts the caller's hang-up as the number's
 * status callback (`inbound-status` on the call-events queue) after 30–300 s of talk from the
 * answer; a caller on hold who gives up is a `completed` callback while the call still waits.
 *
 * The report is a recount from what is stored (the call sessions, the campaign contacts and the
 * concurrency items), never the engine's counters: calls dialed outside the window in the zone
 * that applied, each campaign's peak concurrency from its calls' dial and end times, retries dialed
 * before the gap, a contact dialed while already in a call (or one attempt dialed twice), counters
 * that disagree with the recount, whether the campaigns completed; and for the organization: the
 * peak of live calls from every call's own slot times, the slots left at the end, the fate of each
 * incoming call and each campaign's share of the dials and of the slot-time.
 */
import { writeFileSync } from 'node:fs';
import { seededRandom } from '../shared/adapters/seeded-random';
import { queue } from '../shared/adapters/queue';
import type { CallStatusEvent } from '../shared/adapters/telephony/port';
import { clockMs } from '../shared/clock';
import { keys, Prefix } from '../shared/db/keys';
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
import { isOpen, type CallingWindow } from '../shared/domain/campaigns/window';
import { isWaiting, type CallItem } from '../shared/domain/calls/service';
import { createInboundCall, type IncomingCall, type InboundAnswer } from '../shared/domain/calls/inbound';
import type { CallEventMessage } from '../shared/domain/calls/lifecycle';
import { updateConcurrency } from '../shared/domain/concurrency/service';
import type { ConcurrencyItem } from '../shared/domain/concurrency/slots';
import { ManualClock } from '../shared/local/clock';
import { installLocalFaults, parseFaults } from '../shared/local/faults';
import { startPlatform } from '../shared/local/platform';
import { simulatedDials } from '../shared/adapters/telephony/simulated';

export interface SimulationOptions {
  contacts: number;
  days: number;
  seed?: number;
  /** Each campaign's own `max_concurrent` (default 10). */
  maxConcurrent?: number;
  start?: string;
  /** Virtual seconds per scheduler "minute" (default 300): how often the tick, sweeps and retries' dispatch run. */
  tickSeconds?: number;
  /** LOCAL_FAULTS for the simulated week (shared/local/faults.ts): injected once the campaigns are set up, removed before the recount. */
  faults?: string;
  /** Called once a virtual hour with the virtual time and the wall seconds so far (`--progress`: to stderr). */
  progress?: (line: string) => void;
  /** The organization's concurrency limit (default 6), shared by both campaigns and the incoming calls. */
  limit?: number;
  /** Incoming calls over the days (default the larger of 40 and contacts / 20), in bursts during New York business hours. */
  inbound?: number;
  /** `overflow_queue_seconds` of the number whose overflow is `queue` (default 60). */
  queueSeconds?: number;
}

/** Each campaign's part of the organization's slots. */
export interface CampaignShare {
  name: string;
  contacts: number;
  /** Calls the carrier was asked to place for it. */
  calls_dialed: number;
  /** Its part of both campaigns' dials. */
  dial_share: number;
  /** Its dials while both campaigns had contacts left (up to the first one's completion). */
  dials_while_both_running: number;
  dial_share_while_both_running: number;
  /** Seconds its calls held a slot (from their creation to their end). */
  slot_seconds: number;
  /** Its part of both campaigns' slot-time. */
  slot_time_share: number;
  /** Its own peak of calls dialed at once (against its `max_concurrent`). */
  max_concurrent_seen: number;
  completed_at: string | null;
}

/** What became of the incoming calls. */
export interface InboundReport {
  calls: number;
  /** Given a slot as they rang. */
  answered_at_once: number;
  /** At the limit on the number whose overflow is `reject`: recorded ended `concurrency_limit`. */
  rejected: number;
  /** At the limit on the number whose overflow is `queue`: waited on hold. */
  queued: number;
  /** Of those: given a slot as one freed, then ended by the caller's hang-up. */
  queued_placed: number;
  /** Ended `queue_timeout` at their deadline. */
  queued_timed_out: number;
  /** Hung up while on hold: ended `canceled`. */
  queued_abandoned: number;
  /** Neither of the three (must be 0). */
  queued_unresolved: number;
  /** Placed after their deadline had passed (the sweep that ends them runs once a scheduled minute). */
  queued_placed_after_deadline: number;
  /** The longest wait of a placed call, seconds. */
  queued_wait_seconds_max: number;
  overflow_queue_seconds: number;
  /** Campaign calls created while a caller waited on hold (a slot taken past the queue's head). */
  campaign_calls_while_callers_waited: number;
}

export interface SimulationReport {
  contacts: number;
  days: number;
  seed: number;
  start: string;
  zones: string[];
  blackout_dates: string[];
  /** Both campaigns' figures together (each campaign's own in `campaigns`). */
  calls_placed: number;
  calls_outside_window: number;
  /** The larger of the two campaigns' own peaks, against each one's `max_concurrent`. */
  max_concurrent_seen: number;
  max_concurrent_allowed: number;
  retries_before_gap: number;
  duplicate_dials: number;
  counter_mismatches: number;
  /** Both campaigns completed. */
  completed: boolean;
  /** The later completion. */
  completed_at: string | null;
  contacts_by_status: Record<string, number>;
  calls_by_outcome: Record<string, number>;
  /** Calls the simulated carrier was asked to place: equal to calls_placed when no call was dialed twice. */
  carrier_dials: number;
  /** The organization's concurrency limit. */
  limit: number;
  /** Most calls live at once in the organization (both campaigns and the incoming calls), from each call's own slot times. */
  peak_live_calls: number;
  /** When that peak was first reached. */
  peak_live_at: string | null;
  /** The concurrency items once everything ended: the counter's `total` and `queued`, the slot and queue entries, calls not ended. */
  slots_at_end: { counter_total: number; counter_queued: number; slot_items: number; waiting_entries: number; live_calls: number };
  /** Slot items whose call is not live, plus the difference between the counter's total and the slot items: 0. */
  slots_leaked: number;
  /** Calls that were live without ever holding a slot (must be 0). */
  calls_live_without_slot: number;
  inbound: InboundReport;
  campaigns: CampaignShare[];
  /** Faults injected by kind, when the week ran under faults. */
  faults_injected?: Record<string, number>;
  wall_seconds: number;
  peak_rss_mb: number;
}

const ZONES = ['America/New_York', 'America/Chicago', 'America/Los_Angeles', 'Europe/London', 'Europe/Berlin', 'Asia/Tokyo'];

/** The organization's numbers: the campaigns dial from the first; callers ring the other two. */
const CAMPAIGN_NUMBER = '+14155550142';
const QUEUE_NUMBER = '+14155550143';
const REJECT_NUMBER = '+14155550144';

/** When incoming calls come: New York business hours on weekdays (the blackout day is the campaigns', not the callers'). */
const BUSINESS_HOURS: CallingWindow = {
  window_start: '09:00', window_end: '17:00', window_days: [1, 2, 3, 4, 5], timezone: 'America/New_York', blackout_dates: [], use_contact_timezone: false,
};

/** One person calling in, decided up front from the seed. */
interface Caller {
  at: number;
  to: string;
  from: string;
  providerCallId: string;
  /** Seconds they talk once answered. */
  talkSeconds: number;
  /** On hold, they hang up after this many seconds (null: they wait as long as the platform lets them). */
  patienceSeconds: number | null;
}

/** A caller's call as the platform answered it. */
interface InboundRecord {
  caller: Caller;
  answer: InboundAnswer['answer'];
  callId: string;
  /** A waiting call's deadline. */
  waitingUntil?: string;
}

type Action = { at: number; kind: 'arrive'; caller: Caller } | { at: number; kind: 'give-up'; record: InboundRecord };

/** Callers in bursts of 1 … 1.5 × limit at random moments of business hours within [start, end). */
function inboundCallers(count: number, limit: number, queueSeconds: number, start: number, end: number, seed: number): Caller[] {
  const random = seededRandom(`inbound-${seed}`);
  const callers: Caller[] = [];
  while (callers.length < count) {
    let at: number;
    do at = start + Math.floor((random() * (end - start - 60_000)) / 1000) * 1000;
    while (!isOpen(BUSINESS_HOURS, new Date(at)));
    // Up to half again the limit: a burst alone may fill the organization.
    const size = Math.min(count - callers.length, 1 + Math.floor(random() * Math.ceil(limit * 1.5)));
    for (let i = 0; i < size; i++) {
      const n = callers.length + 1;
      const queued = random() < 0.6;
      callers.push({
        at: at + Math.floor(random() * 30) * 1000,
        to: queued ? QUEUE_NUMBER : REJECT_NUMBER,
        from: `+1718${String(2_000_000 + n).padStart(7, '0')}`,
        providerCallId: `SIMIN${seed}x${n}`,
        talkSeconds: 30 + Math.floor(random() * 271),
        patienceSeconds: queued && random() < 0.25 ? 5 + Math.floor(random() * Math.max(1, queueSeconds - 10)) : null,
      });
    }
  }
  return callers.sort((a, b) => a.at - b.at);
}

/**
 * A carrier's request that fails is made again, as a carrier would (Twilio asks a number's fallback
 * URL when its webhook fails; a sender retries an SQS send). Only faults (LOCAL_FAULTS) make these fail.
 */
async function persist<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if (attempt >= 20) throw err;
    }
  }
}

export async function simulate(options: SimulationOptions): Promise<SimulationReport> {
  const wallStart = performance.now();
  let peakRss = process.memoryUsage().rss;
  const seed = options.seed ?? 1;
  const start = options.start ?? '2026-10-29T00:00:00.000Z';
  const limit = options.limit ?? 6;
  const queueSeconds = options.queueSeconds ?? 60;
  const inboundCount = options.inbound ?? Math.max(40, Math.round(options.contacts / 20));
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
    const number = await importPhoneNumber(orgId, ImportBody.parse({ phone: CAMPAIGN_NUMBER, type: 'pstn' }));
    await importPhoneNumber(orgId, ImportBody.parse({ phone: QUEUE_NUMBER, type: 'pstn', inbound_agent_id: agent.id, overflow: 'queue', overflow_queue_seconds: queueSeconds }));
    await importPhoneNumber(orgId, ImportBody.parse({ phone: REJECT_NUMBER, type: 'pstn', inbound_agent_id: agent.id, overflow: 'reject' }));
    await updateConcurrency(orgId, { limit });
    // Contacts straight to the table (setup, not what is simulated), stored as the contacts service
    // stores them (its item builder), each in one of the zones; every other one to the second campaign.
    const ids: [string[], string[]] = [[], []];
    const items: Record<string, unknown>[] = [];
    for (let i = 0; i < options.contacts; i++) {
      const { contact, items: stored } = newContactItems(orgId, {
        first_name: `Sim${i}`, phone: `+1646${String(2_000_000 + i).padStart(7, '0')}`, timezone: ZONES[Math.floor(random() * ZONES.length)],
      } as ContactInput, start);
      ids[i % 2]!.push(contact.id);
      items.push(...stored);
    }
    await putMany(items, { parallel: 8 });
    const schedule = {
      window_start: '09:00', window_end: '17:00', window_days: [1, 2, 3, 4, 5], timezone: 'America/New_York', use_contact_timezone: true,
      blackout_dates: ['2026-11-03'], max_concurrent: options.maxConcurrent ?? 10, retry_attempts: 2, retry_gap_min: 720,
    };
    const campaigns: { id: string; name: string; contacts: number }[] = [];
    for (const [i, list] of ids.entries()) {
      const name = `Simulated week ${'AB'[i]}`;
      const campaign = await createCampaign(orgId, CreateCampaignBody.parse({
        name, agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: list.slice(0, 10_000), schedule,
      }));
      for (let j = 10_000; j < list.length; j += 10_000) await addCampaignContacts(orgId, campaign.id, list.slice(j, j + 10_000));
      campaigns.push({ id: campaign.id, name, contacts: list.length });
    }
    for (const c of campaigns) await startCampaign(orgId, c.id);
    const faults = installLocalFaults(parseFaults(options.faults));
    const dialsBefore = simulatedDials();

    const end = clock.now() + options.days * 86_400_000;
    const agenda: Action[] = inboundCallers(inboundCount, limit, queueSeconds, clock.now(), end, seed).map((caller) => ({ at: caller.at, kind: 'arrive', caller }));
    const inbound: InboundRecord[] = [];
    /** Callers on hold, looked at after each step: placed ones talk, then hang up. */
    const onHold = new Map<string, InboundRecord>();

    // The caller's hang-up, posted as the number's status callback (Twilio's for an incoming call) when it happens.
    const hangUp = (caller: Caller, atMs: number, durationSec?: number) => {
      const event: CallStatusEvent = { providerCallId: caller.providerCallId, status: 'completed', ...(durationSec !== undefined ? { durationSec } : {}), at: new Date(atMs).toISOString() };
      const message: CallEventMessage = { kind: 'inbound-status', provider: 'simulated', event };
      const delaySeconds = Math.min(900, Math.max(0, Math.ceil((atMs - clockMs()) / 1000)));
      return persist(() => queue().send('call-events', message, { delaySeconds }));
    };
    const act = async (action: Action) => {
      if (action.kind === 'give-up') {
        const call = await persist(() => getItem<CallItem>(keys.call(orgId, action.record.callId)));
        if (call && isWaiting(call)) await hangUp(action.record.caller, clock.now());
        return;
      }
      const { caller } = action;
      const incoming: IncomingCall = { to: caller.to, from: caller.from, providerCallId: caller.providerCallId, provider: 'simulated' };
      const answer = await persist(() => createInboundCall(incoming));
      if (answer.answer === 'reject' && answer.reason !== 'concurrency_limit') throw new Error(`An incoming call was refused ${answer.reason}: the simulation's numbers are set up wrong`);
      if (!answer.call) throw new Error(`An incoming call was answered ${answer.answer} without a call`);
      const record: InboundRecord = { caller, answer: answer.answer, callId: answer.call.id, ...(answer.call.waiting_until ? { waitingUntil: answer.call.waiting_until } : {}) };
      inbound.push(record);
      if (answer.answer === 'stream') await hangUp(caller, Date.parse(answer.call.answered_at ?? answer.call.created_at) + caller.talkSeconds * 1000, caller.talkSeconds);
      if (answer.answer === 'queue') {
        onHold.set(record.callId, record);
        if (caller.patienceSeconds !== null) plan(agenda, { at: clock.now() + caller.patienceSeconds * 1000, kind: 'give-up', record });
      }
    };
    const followHold = async () => {
      for (const [callId, record] of onHold) {
        const call = await persist(() => getItem<CallItem>(keys.call(orgId, callId)));
        if (!call || call.status === 'ended') onHold.delete(callId);
        else if (call.status === 'in_progress') {
          // Connected (a slot freed, the promotion placed it): the caller talks from the answer.
          onHold.delete(callId);
          await hangUp(record.caller, Date.parse(call.answered_at!) + record.caller.talkSeconds * 1000, record.caller.talkSeconds);
        }
      }
    };

    const settle = async () => {
      for (;;) {
        await platform.queue.drain();
        // The runs in progress, awaited (not polled): a scheduled job's run may queue more messages.
        await platform.scheduler.idle();
        const stats = Object.values(platform.queue.stats());
        if (stats.every((q) => q.visible === 0 && q.inFlight === 0)) return;
      }
    };
    let lastCheck = 0;
    for (;;) {
      await settle();
      if (onHold.size) await followHold();
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
      // Completion is read once a virtual hour (completed_at is the campaign's own; a few more idle ticks cost one GetItem each):
      // both campaigns done, every caller has called, and the organization's last call has ended.
      if (clock.now() - lastCheck >= 3_600_000) {
        lastCheck = clock.now();
        options.progress?.(`${new Date(clock.now()).toISOString()} (virtual) after ${Math.round((performance.now() - wallStart) / 1000)} s`);
        if (!agenda.length && !onHold.size) {
          const done = await Promise.all(campaigns.map((c) => getItem<CampaignItem>(keys.campaign(orgId, c.id))));
          if (done.every((c) => c?.status === 'completed')) {
            const counter = await getItem<ConcurrencyItem>(keys.concurrency(orgId));
            if (!counter?.total && !counter?.queued) break;
          }
        }
      }
      const next = [clock.nextDueAt(), agenda[0]?.at].filter((t): t is number => t !== undefined).reduce((a, b) => Math.min(a, b), Infinity);
      if (next === Infinity || next > end) break;
      clock.advance(Math.max(0, next - clock.now()));
      while (agenda.length && agenda[0]!.at <= clock.now()) await act(agenda.shift()!);
    }
    await settle();
    installLocalFaults(undefined);
    // A job that failed for good is a bug the report must not hide.
    const dead = Object.entries(platform.queue.stats()).filter(([, q]) => q.deadLetters > 0);
    if (dead.length) {
      const first = platform.queue.deadLetters(dead[0]![0])[0];
      throw new Error(`Messages went to a dead-letter queue: ${dead.map(([name, q]) => `${name} ${q.deadLetters}`).join(', ')}; the first: ${first?.body} (${first?.lastError})`);
    }
    const report = await recount(orgId, campaigns, schedule.max_concurrent, inbound, clock.now());
    return {
      contacts: options.contacts, days: options.days, seed, start, zones: ZONES, blackout_dates: schedule.blackout_dates, ...report.campaigns,
      carrier_dials: simulatedDials() - dialsBefore,
      limit,
      ...report.organization,
      inbound: { ...report.inbound, overflow_queue_seconds: queueSeconds },
      campaigns: report.shares,
      ...(faults ? { faults_injected: faults.injected() } : {}),
      wall_seconds: Math.round((performance.now() - wallStart) / 100) / 10,
      peak_rss_mb: Math.round(Math.max(peakRss, process.memoryUsage().rss) / 1024 / 1024),
    };
  } finally {
    installLocalFaults(undefined);
    await platform.stop();
  }
}

/** Puts an action in the agenda in time order. */
function plan(agenda: Action[], action: Action): void {
  const i = agenda.findIndex((a) => a.at > action.at);
  agenda.splice(i < 0 ? agenda.length : i, 0, action);
}

/** The most intervals open at once (an end at the same instant as a start comes first), and when first. */
function peakOf(intervals: [number, number][]): { peak: number; at: number | null } {
  const edges = intervals.flatMap(([from, to]) => [[from, 1], [to, -1]] as [number, number][]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let live = 0;
  let peak = 0;
  let at: number | null = null;
  for (const [t, d] of edges) {
    live += d;
    if (live > peak) [peak, at] = [live, t];
  }
  return { peak, at };
}

const ms = (iso: string | null | undefined, otherwise: number) => (iso ? Date.parse(iso) : otherwise);
const share = (part: number, whole: number) => (whole ? Math.round((part / whole) * 1000) / 1000 : 0);

/** The report's figures, from the stored call sessions, campaign contacts and concurrency items only. */
async function recount(orgId: string, campaigns: { id: string; name: string; contacts: number }[], allowed: number, inbound: InboundRecord[], now: number) {
  const calls: CallItem[] = [];
  for await (const c of queryAll<CallItem>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: 'CALL#' })) calls.push(c);
  const each: Awaited<ReturnType<typeof recountCampaign>>[] = [];
  for (const c of campaigns) each.push(await recountCampaign(orgId, c.id, calls.filter((call) => call.campaign_id === c.id)));

  // Together, as one campaign's report read before.
  const sum = (f: (r: (typeof each)[number]) => number) => each.reduce((a, r) => a + f(r), 0);
  const merge = (f: (r: (typeof each)[number]) => Record<string, number>) => {
    const out: Record<string, number> = {};
    for (const r of each) for (const [k, v] of Object.entries(f(r))) out[k] = (out[k] ?? 0) + v;
    return out;
  };
  const completedAts = each.map((r) => r.completed_at);
  const together = {
    calls_placed: sum((r) => r.calls_placed),
    calls_outside_window: sum((r) => r.calls_outside_window),
    max_concurrent_seen: Math.max(...each.map((r) => r.max_concurrent_seen)),
    max_concurrent_allowed: allowed,
    retries_before_gap: sum((r) => r.retries_before_gap),
    duplicate_dials: sum((r) => r.duplicate_dials),
    counter_mismatches: sum((r) => r.counter_mismatches),
    completed: each.every((r) => r.completed),
    completed_at: completedAts.every(Boolean) ? completedAts.sort().at(-1)! : null,
    contacts_by_status: merge((r) => r.contacts_by_status),
    calls_by_outcome: merge((r) => r.calls_by_outcome),
  };

  // The organization's live calls: a campaign call from its creation (queued to the carrier: its slot is
  // taken in the transaction that creates it) to its end; an incoming call from its answer (at once, or
  // when a slot freed for a caller on hold) to its end. A refused caller, and one who left the hold
  // without an answer (timed out, hung up), was never live. Each live call must have held a slot.
  const byId = new Map(calls.map((c) => [c.id, c]));
  const liveFrom = (c: CallItem) => (c.direction === 'inbound' ? (c.answered_at ? Date.parse(c.answered_at) : undefined) : Date.parse(c.created_at));
  const wasLive = calls.filter((c) => liveFrom(c) !== undefined);
  const intervals = wasLive.map((c) => [liveFrom(c)!, ms(c.ended_at, Infinity)] as [number, number]);
  const peak = peakOf(intervals);

  // What is left of the concurrency items: nothing, once every call has ended.
  const counter = await getItem<ConcurrencyItem>(keys.concurrency(orgId));
  const slots: { call_id: string }[] = [];
  for await (const s of queryAll<{ call_id: string }>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.concurrencySlot }, undefined, true)) slots.push(s);
  const waiting: { sk: string }[] = [];
  for await (const w of queryAll<{ sk: string }>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.callWaiting }, ['sk'], true)) waiting.push(w);
  const live = calls.filter((c) => c.status !== 'ended');
  const staleSlots = slots.filter((s) => byId.get(s.call_id)?.status === undefined || byId.get(s.call_id)!.status === 'ended').length;
  const organization = {
    peak_live_calls: peak.peak,
    peak_live_at: peak.at === null ? null : new Date(peak.at).toISOString(),
    slots_at_end: { counter_total: counter?.total ?? 0, counter_queued: counter?.queued ?? 0, slot_items: slots.length, waiting_entries: waiting.length, live_calls: live.length },
    slots_leaked: staleSlots + Math.abs((counter?.total ?? 0) - slots.length),
    calls_live_without_slot: wasLive.filter((c) => !c.slot_kind).length,
  };

  // The incoming calls, by how the platform answered each and how it ended.
  const fate = { calls: inbound.length, answered_at_once: 0, rejected: 0, queued: 0, queued_placed: 0, queued_timed_out: 0, queued_abandoned: 0, queued_unresolved: 0, queued_placed_after_deadline: 0, queued_wait_seconds_max: 0, campaign_calls_while_callers_waited: 0 };
  const holds: [number, number][] = [];
  for (const r of inbound) {
    const c = byId.get(r.callId);
    if (r.answer === 'stream') fate.answered_at_once++;
    else if (r.answer === 'reject') fate.rejected++;
    if (r.answer !== 'queue') continue;
    fate.queued++;
    if (!c) fate.queued_unresolved++;
    else if (c.answered_at) {
      fate.queued_placed++;
      fate.queued_wait_seconds_max = Math.max(fate.queued_wait_seconds_max, Math.round((Date.parse(c.answered_at) - Date.parse(c.created_at)) / 1000));
      if (r.waitingUntil && c.answered_at > r.waitingUntil) fate.queued_placed_after_deadline++;
    } else if (c.disconnection_reason === 'queue_timeout') fate.queued_timed_out++;
    else if (c.disconnection_reason === 'canceled') fate.queued_abandoned++;
    else fate.queued_unresolved++;
    if (c) holds.push([Date.parse(c.created_at), Math.min(ms(c.answered_at, Infinity), ms(c.ended_at, Infinity))]);
  }
  for (const c of calls) {
    const t = c.campaign_id ? Date.parse(c.created_at) : NaN;
    if (holds.some(([from, to]) => t > from && t < to)) fate.campaign_calls_while_callers_waited++;
  }

  // Each campaign's part: of the dials (over the run, and while both still had contacts left), and of the slot-time.
  const contestedUntil = Math.min(now, ...completedAts.map((at) => ms(at, now)));
  const perCampaign = campaigns.map((c, i) => {
    const own = calls.filter((call) => call.campaign_id === c.id);
    const dialed = own.filter((call) => call.started_at);
    return {
      dialed: dialed.length,
      contested: dialed.filter((call) => Date.parse(call.started_at!) < contestedUntil).length,
      slotMs: own.reduce((a, call) => a + (ms(call.ended_at, now) - Date.parse(call.created_at)), 0),
      seen: each[i]!.max_concurrent_seen,
    };
  });
  const total = (f: (p: (typeof perCampaign)[number]) => number) => perCampaign.reduce((a, p) => a + f(p), 0);
  const shares: CampaignShare[] = campaigns.map((c, i) => {
    const p = perCampaign[i]!;
    return {
      name: c.name,
      contacts: c.contacts,
      calls_dialed: p.dialed,
      dial_share: share(p.dialed, total((x) => x.dialed)),
      dials_while_both_running: p.contested,
      dial_share_while_both_running: share(p.contested, total((x) => x.contested)),
      slot_seconds: Math.round(p.slotMs / 1000),
      slot_time_share: share(p.slotMs, total((x) => x.slotMs)),
      max_concurrent_seen: p.seen,
      completed_at: each[i]!.completed_at,
    };
  });
  return { campaigns: together, organization, inbound: fate, shares };
}

/** One campaign's figures, from its stored call sessions and campaign contacts only. */
async function recountCampaign(orgId: string, campaignId: string, calls: CallItem[]) {
  const campaign = (await getItem<CampaignItem>(keys.campaign(orgId, campaignId)))!;
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
  const seen = peakOf(dialed.map((c) => [Date.parse(c.started_at!), ms(c.ended_at, Infinity)])).peak;

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
    ...(arg('limit') ? { limit: Number(arg('limit')) } : {}),
    ...(arg('inbound') ? { inbound: Number(arg('inbound')) } : {}),
    ...(arg('queue-seconds') ? { queueSeconds: Number(arg('queue-seconds')) } : {}),
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

/**
 * Campaigns at scale: how fast contacts are added through the API against a raw BatchWriteItem
 * of the same items, what one dispatch costs at 1,000 and at 100,000 contacts (it must not grow
 * with the campaign), read and write units per contact dialed, and the runtime's peak memory.
 * The real HTTP API (create, add contacts) on the local runtime, and the real dispatcher with a
 * recording dialer (the calls are ended through the engine's own outcome function).
 *
 *   npx tsx bench/campaigns.ts                 prints the markdown section
 *   BENCH_CAMPAIGN_LARGE=100000 (default)      the large campaign (assembled through the API, 10,000 per request)
 *   BENCH_SIMULATE_SIZES=2000 (default)        simulated weeks (scripts/simulate.ts) of these contact counts;
 *                                              `2000,10000` adds the 10,000-contact week (about half an hour), `0` none
 *   import { campaignBenchmark }               returns it (npm run bench writes docs/benchmarks.md)
 */
import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../shared/adapters/queue';
import { keys } from '../shared/db/keys';
import { putMany } from '../shared/db/filtered-query';
import { db } from '../shared/db/client';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { campaignContactId, contactStatusIndex, dueIndex, CONTACT_ENTITY } from '../shared/domain/campaigns/model';
import { installCampaignDialer, type CampaignCallRequest } from '../shared/domain/campaigns/dialer';
import { dispatchCampaign } from '../shared/domain/campaigns/engine';
import { recordCampaignCallOutcome } from '../shared/domain/campaigns/outcomes';
import { startPlatform } from '../shared/local/platform';

const PER_REQUEST = 10_000;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Peak resident memory of this process (the runtime runs in it), sampled. */
function memoryProbe() {
  let peak = process.memoryUsage().rss;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 200);
  timer.unref();
  return { peakMb: () => Math.max(peak, process.memoryUsage().rss) / 1024 / 1024, stop: () => clearInterval(timer) };
}

/** Contacts written straight to the table (the seed, not what is measured). */
async function seedContacts(orgId: string, n: number, offset: number): Promise<string[]> {
  const ids: string[] = [];
  const items: Record<string, unknown>[] = [];
  const now = new Date().toISOString();
  for (let i = 0; i < n; i++) {
    const id = uuidv7();
    ids.push(id);
    const digits = String(2_000_000 + offset + i).padStart(7, '0');
    items.push({
      ...keys.contact(orgId, id), entity: 'CONTACT', version: 1, id, first_name: `Bench${offset + i}`, last_name: '', email: '', company: '', metadata: {},
      phone: `+1646${digits}`, timezone: '', opt_out: false, tags: [], created_at: now, updated_at: now,
    });
  }
  await putMany(items, { parallel: 8 });
  return ids;
}

/** Items the add writes for these contacts, written raw: the baseline. */
function rawItems(orgId: string, campaignId: string, contactIds: string[], offset: number) {
  const now = new Date().toISOString();
  return contactIds.map((contactId, i) => {
    const id = campaignContactId(campaignId, contactId);
    return {
      ...keys.campaignContact(orgId, campaignId, id), entity: CONTACT_ENTITY, id, campaign_id: campaignId, contact_id: contactId,
      name: `Bench${offset + i}`, phone: `+1646${String(2_000_000 + offset + i).padStart(7, '0')}`, email: '', tags: [], timezone: '', status: 'pending',
      attempt_count: 0, last_attempted_at: null, next_retry_at: null, call_duration_sec: 0, error_message: '', call_session_id: '',
      ...dueIndex(orgId, campaignId, id, now), ...contactStatusIndex(orgId, campaignId, id, 'pending'), created_at: now, updated_at: now,
    };
  });
}

interface AddRun { contacts: number; requests: { label: string; seconds: number }[]; rawSeconds: number }

export interface CampaignScale {
  add: AddRun[];
  dispatch: { contacts: number; medianMs: number; samples: number; readPerDial: number; writePerDial: number }[];
  peakRssMb: number;
}

type Call = CampaignCallRequest & { callId: string };

export async function runCampaignBench(sizes: number[]): Promise<CampaignScale> {
  const key = generateApiKey();
  const probe = memoryProbe();
  const platform = await startPlatform({ port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, env: { LOG_LEVEL: 'SILENT', POWERTOOLS_LOG_LEVEL: 'SILENT', API_KEY_CACHE_SECONDS: '3600' }, log: () => undefined });
  const orgId = platform.keys[0]!.organizationId;
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${platform.url}/api/v1${path}`, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
    const json = (await res.json()) as { success: boolean; data: Record<string, unknown> };
    if (!json.success) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 500)}`);
    return json.data;
  };
  const result: CampaignScale = { add: [], dispatch: [], peakRssMb: 0 };
  // Capacity per call, as DynamoDB Local reports it.
  const units = { read: 0, write: 0 };
  db().middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as Record<string, unknown>).ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const cc = (out.output as { ConsumedCapacity?: unknown }).ConsumedCapacity;
      const isWrite = /Put|Update|Delete|TransactWrite|BatchWrite/.test(String(context.commandName));
      for (const c of (Array.isArray(cc) ? cc : cc ? [cc] : []) as { CapacityUnits?: number }[]) units[isWrite ? 'write' : 'read'] += c.CapacityUnits ?? 0;
      return out;
    },
    { step: 'initialize', name: 'campaignBenchMeter' },
  );
  try {
    const agent = await api('POST', '/agents', { name: 'Bench caller' });
    const number = await api('POST', '/phone-numbers/import', { phone: '+14155550142', type: 'pstn' });
    let offset = 0;
    for (const size of sizes) {
      const run: AddRun = { contacts: size, requests: [], rawSeconds: 0 };
      let campaignId = '';
      for (let done = 0; done < size; done += PER_REQUEST) {
        const n = Math.min(PER_REQUEST, size - done);
        const ids = await seedContacts(orgId, n, offset);
        const t = performance.now();
        if (!campaignId) {
          const c = await api('POST', '/campaigns', {
            name: `Bench ${size}`, agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: ids,
            schedule: { window_start: '00:00', window_end: '23:59', window_days: [0, 1, 2, 3, 4, 5, 6], max_concurrent: 10, timezone: 'UTC' },
          });
          campaignId = c.id as string;
          run.requests.push({ label: 'create', seconds: (performance.now() - t) / 1000 });
        } else {
          await api('POST', `/campaigns/${campaignId}/contacts`, { contact_ids: ids });
          run.requests.push({ label: `add #${run.requests.length}`, seconds: (performance.now() - t) / 1000 });
        }
        // The baseline: the same campaign contact items, BatchWriteItem of 25, 8 in parallel, into another partition.
        const raw = rawItems(orgId, uuidv7(), ids, offset);
        const r = performance.now();
        await putMany(raw, { parallel: 8 });
        run.rawSeconds += (performance.now() - r) / 1000;
        offset += n;
      }
      result.add.push(run);
      result.dispatch.push({ contacts: size, ...(await measureDispatch(orgId, campaignId, units)) });
    }
  } finally {
    result.peakRssMb = probe.peakMb();
    probe.stop();
    installCampaignDialer(undefined);
    await platform.stop();
  }
  return result;
}

/**
 * Starts the campaign with a recording dialer and the queue captured (nothing runs behind the
 * bench's back), then: dispatch (fills 10 slots), end those 10 calls through the outcome
 * function, dispatch again… Each dispatch reads only the due contacts it needs.
 */
async function measureDispatch(orgId: string, campaignId: string, units: { read: number; write: number }) {
  const calls: Call[] = [];
  installCampaignDialer({ async placeCampaignCall(input) { const c = { ...input, callId: uuidv7() }; calls.push(c); return { callId: c.callId }; } });
  const captured = { async send() {} };
  const { startCampaign } = await import('../shared/domain/campaigns/service');
  installLocalQueue(captured as never);
  await startCampaign(orgId, campaignId);
  const times: number[] = [];
  let dialed = 0;
  const before = { ...units };
  for (let round = 0; round < 12; round++) {
    const t = performance.now();
    const s = await dispatchCampaign(orgId, campaignId);
    if (round >= 2) times.push(performance.now() - t);
    dialed += s.placed;
    const ended = calls.splice(0);
    await Promise.all(ended.map((c) => recordCampaignCallOutcome(orgId, campaignId, c.campaignContactId, c.attempt, {
      callId: c.callId, endedAt: new Date().toISOString(), durationSec: 30, answered: true, disconnectionReason: 'completed',
    })));
  }
  return { medianMs: median(times), samples: times.length, readPerDial: (units.read - before.read) / dialed, writePerDial: (units.write - before.write) / dialed };
}

/** Simulated weeks (scripts/simulate.ts, seed 1, 7 days) of each size: wall time, calls, violations. */
export async function simulatedWeeks(sizes: number[]): Promise<string[]> {
  const { simulate } = await import('../scripts/simulate');
  const rows: string[] = [];
  for (const contacts of sizes) {
    const r = await simulate({ contacts, days: 7, seed: 1 });
    const violations = r.calls_outside_window + r.retries_before_gap + r.duplicate_dials + r.counter_mismatches + (r.max_concurrent_seen > r.max_concurrent_allowed ? 1 : 0);
    rows.push(`| ${contacts.toLocaleString('en')} | ${r.calls_placed.toLocaleString('en')} | ${violations} | ${r.completed ? 'yes' : 'no'} | **${r.wall_seconds.toFixed(0)} s** | ${r.peak_rss_mb} MB |`);
  }
  return rows;
}

export async function campaignBenchmark(): Promise<string> {
  const large = Number(process.env.BENCH_CAMPAIGN_LARGE ?? 100_000);
  const weeks = (process.env.BENCH_SIMULATE_SIZES ?? '2000').split(',').map(Number).filter((n) => n > 0);
  const r = await runCampaignBench([1_000, large]);
  const weekRows = weeks.length ? await simulatedWeeks(weeks) : [];
  const addRows = r.add.map((a) => {
    const api = a.requests.reduce((s, x) => s + x.seconds, 0);
    const slowest = Math.max(...a.requests.map((x) => x.seconds));
    return `| ${a.contacts.toLocaleString('en')} | ${a.requests.length} | ${(a.contacts / api).toFixed(0)} | ${(a.contacts / a.rawSeconds).toFixed(0)} | **${(a.rawSeconds / api).toFixed(2)}×** | ${slowest.toFixed(1)} s |`;
  });
  const d = r.dispatch;
  return [
    '## (e) Campaigns at scale',
    '',
    'The real API on the local runtime: `POST /campaigns` with the first 10,000 contacts, then `POST /campaigns/{id}/contacts` with 10,000 more per request.',
    'Baseline in the same run: a raw `BatchWriteItem` (25 a request, 8 in parallel) of the same campaign-contact items.',
    '',
    '| campaign size | requests | contacts/s through the API | contacts/s raw BatchWriteItem | API ÷ raw | slowest request |',
    '|---|---|---|---|---|---|',
    ...addRows,
    '',
    'Dispatch: the campaign started with `max_concurrent` 10 and every contact due; each round the real dispatcher fills the 10 free slots',
    '(claims, places through a recording dialer) and the 10 calls are then ended through `recordCampaignCallOutcome`. Median of 10 dispatches.',
    '',
    '| campaign size | dispatch median | read units per contact dialed | write units per contact dialed |',
    '|---|---|---|---|',
    ...d.map((x) => `| ${x.contacts.toLocaleString('en')} | ${x.medianMs.toFixed(1)} ms | ${x.readPerDial.toFixed(1)} | ${x.writePerDial.toFixed(1)} |`),
    '',
    `**Dispatch at ${d[1]!.contacts.toLocaleString('en')} ÷ at ${d[0]!.contacts.toLocaleString('en')} contacts: ${(d[1]!.medianMs / d[0]!.medianMs).toFixed(2)}×** (O(contacts due now): it reads one page of the due index, never the campaign). Units per dial include the outcome (contact and counters in one transaction). Peak RSS of the runtime process (API, jobs and bench in one Node process; DynamoDB Local's JVM not included): **${r.peakRssMb.toFixed(0)} MB**.`,
    '',
    ...(weekRows.length
      ? [
          'Simulated weeks (`npm run simulate -- --contacts N --days 7`, seed 1): the whole platform on a manual clock, every answered call a conversation',
          'run by the engine and analysed. Violations: calls outside a window, retries before their gap, double dials, counters that disagree with',
          'the recount, concurrency above the limit. Targets on a 2-core machine: 2,000 contacts under 400 s, 10,000 under 30 minutes',
          '(`BENCH_SIMULATE_SIZES=2000,10000`; the default runs 2,000 only, to keep the bench short).',
          '',
          '| contacts | calls | violations | completed | wall time | peak RSS |',
          '|---|---|---|---|---|---|',
          ...weekRows,
          '',
        ]
      : []),
  ].join('\n');
}

if (require.main === module) {
  campaignBenchmark().then((s) => console.log(s), (err) => { console.error(err); process.exit(1); });
}

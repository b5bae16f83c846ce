/**
 * The fault tier (issue 36, docs/operations.md "Faults on demand"): a few hundred contacts in two
 * campaigns sharing the organization's concurrency limit, with incoming calls, dialed through the real
 * tick, dispatcher and call jobs on a manual clock (the simulation, scripts/simulate.ts) while DynamoDB
 * cancels transactions, throttles and holds back batch keys, sends fail, messages come twice and job
 * containers are recycled. The invariants are those of a quiet run, read back from the table: every
 * contact settled, none dialed twice at once or before its retry gap or outside its window, the
 * campaigns' caps and the organization's limit held, no slot leaked, counters equal to a recount.
 */
import { simulate } from '../../scripts/simulate';
import { FAULT_KINDS } from '../../shared/local/faults';

// Throttles are retried by the SDK with its own real-time backoff: a lower rate keeps the tier within minutes,
// and backoff=0.1 makes each of those waits a tenth of the SDK's (the same retries: shared/fault-point.ts).
const FAULTS = 'on,dynamo.throttle=0.004,backoff=0.1,seed=36';

it('200 contacts in two campaigns under one limit, with incoming calls, settle under faults exactly as without them', async () => {
  const report = await simulate({ contacts: 200, days: 7, seed: 36, maxConcurrent: 20, tickSeconds: 1800, faults: FAULTS });
  console.log(`fault tier, campaign: ${JSON.stringify({ faults: FAULTS, calls_placed: report.calls_placed, carrier_dials: report.carrier_dials, contacts_by_status: report.contacts_by_status, calls_by_outcome: report.calls_by_outcome, peak_live_calls: report.peak_live_calls, slots_leaked: report.slots_leaked, inbound: report.inbound, faults_injected: report.faults_injected, wall_seconds: report.wall_seconds })}`);
  expect(report).toMatchObject({
    completed: true,
    calls_outside_window: 0,
    retries_before_gap: 0,
    duplicate_dials: 0,
    counter_mismatches: 0,
  });
  expect(report.max_concurrent_seen).toBeLessThanOrEqual(20);
  // The organization's limit, shared by both campaigns and the incoming calls, held; no slot leaked, no caller left on hold.
  expect(report.peak_live_calls).toBeLessThanOrEqual(report.limit);
  expect(report.calls_live_without_slot).toBe(0);
  expect(report.slots_at_end).toEqual({ counter_total: 0, counter_queued: 0, slot_items: 0, waiting_entries: 0, live_calls: 0 });
  expect(report.slots_leaked).toBe(0);
  expect(report.inbound.queued_unresolved).toBe(0);
  // Nothing done twice: the carrier was asked once per dialed call, redeliveries and recycled containers notwithstanding.
  expect(report.carrier_dials).toBe(report.calls_placed);
  // Settled: every contact reached an end state.
  expect(Object.keys(report.contacts_by_status).filter((s) => s === 'pending' || s === 'in_progress')).toEqual([]);
  expect(Object.values(report.contacts_by_status).reduce((a, b) => a + b, 0)).toBe(200);
  // Every kind that reaches this flow was met (S3 is not on a campaign's path without recordings; the model is: answered calls converse).
  const met = Object.entries(report.faults_injected!).filter(([, n]) => n > 0).map(([k]) => k);
  expect(met.sort()).toEqual(Object.keys(FAULT_KINDS).filter((k) => k !== 's3.5xx').sort());
}, 900_000);

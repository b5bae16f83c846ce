import { simulate } from '../../scripts/simulate';

// The simulation (scripts/simulate.ts) at a small size: the real tick, dispatcher, call jobs
// (call-place, call-events, analysis) and outcome handling on a manual clock, the simulated carrier
// drawing outcomes at random (seeded), over a week that crosses a DST change and a blackout date.
// One organization with a concurrency limit runs two campaigns that share it and takes incoming
// calls in bursts (numbers whose overflow is `queue` and `reject`). The report is a recount from the
// stored call sessions, campaign contacts and concurrency items.
describe('a simulated week of two campaigns and incoming calls under one concurrency limit', () => {
  it('places calls only inside each contact\'s window, never above max_concurrent nor the limit, never a retry before its gap, never a contact twice at once, with counters equal to a recount, shares the slots, leaks none, and completes', async () => {
    // Each campaign may dial 3 at once; together they would take 6 of the organization's 5 slots.
    const report = await simulate({ contacts: 40, days: 7, seed: 7, maxConcurrent: 3, tickSeconds: 900, limit: 5, inbound: 60 });
    expect(report).toMatchObject({
      calls_outside_window: 0,
      retries_before_gap: 0,
      duplicate_dials: 0,
      counter_mismatches: 0,
      completed: true,
      max_concurrent_allowed: 3,
      limit: 5,
    });
    expect(report.max_concurrent_seen).toBe(3); // never above, and all of it used
    expect(report.calls_placed).toBeGreaterThan(40); // retries happened
    // The carrier's random outcomes: answered, rung out, busy, voicemail all occurred.
    expect(Object.keys(report.calls_by_outcome)).toEqual(expect.arrayContaining(['completed', 'no_answer', 'busy', 'voicemail']));
    // Retries twelve hours apart carried the campaign past the first night into the next days.
    expect(report.completed_at! > '2026-10-30').toBe(true);

    // The organization: never more live calls than the limit (and the limit reached), every live call held a slot.
    expect(report.peak_live_calls).toBe(5);
    expect(report.calls_live_without_slot).toBe(0);
    // Nothing left once every call ended: no count, no slot, no one waiting.
    expect(report.slots_at_end).toEqual({ counter_total: 0, counter_queued: 0, slot_items: 0, waiting_entries: 0, live_calls: 0 });
    expect(report.slots_leaked).toBe(0);
    // Incoming calls: some found it full; those on `reject` were recorded, those on `queue` each placed, timed out or hung up.
    const inbound = report.inbound;
    expect(inbound.calls).toBe(60);
    expect(inbound.answered_at_once + inbound.rejected + inbound.queued).toBe(60);
    expect(inbound.rejected).toBeGreaterThan(0);
    expect(inbound.queued).toBeGreaterThan(0);
    expect(inbound.queued_placed).toBeGreaterThan(0);
    expect(inbound.queued_unresolved).toBe(0);
    expect(inbound.queued_placed + inbound.queued_timed_out + inbound.queued_abandoned).toBe(inbound.queued);
    // Both campaigns got their share while both had contacts left.
    expect(report.campaigns).toHaveLength(2);
    for (const c of report.campaigns) {
      expect(c.dial_share_while_both_running).toBeGreaterThanOrEqual(0.35);
      expect(c.slot_time_share).toBeGreaterThanOrEqual(0.35);
      expect(c.max_concurrent_seen).toBeLessThanOrEqual(3);
    }
  }, 600_000);
});

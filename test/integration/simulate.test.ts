import { simulate } from '../../scripts/simulate';

// The campaign simulation (scripts/simulate.ts) at a small size: the real tick, dispatcher, call
// jobs (call-place, call-events, analysis) and outcome handling on a manual clock, the simulated
// carrier drawing outcomes at random (seeded), over a week that crosses a DST change and a
// blackout date. The report is a recount from the stored call sessions and campaign contacts.
describe('a simulated week of one campaign', () => {
  it('places calls only inside each contact\'s window, never above max_concurrent, never a retry before its gap, never a contact twice at once, with counters equal to a recount, and completes', async () => {
    const report = await simulate({ contacts: 40, days: 7, seed: 7, maxConcurrent: 3, tickSeconds: 900 });
    expect(report).toMatchObject({
      calls_outside_window: 0,
      retries_before_gap: 0,
      duplicate_dials: 0,
      counter_mismatches: 0,
      completed: true,
      max_concurrent_allowed: 3,
    });
    expect(report.max_concurrent_seen).toBe(3); // never above, and all of it used
    expect(report.calls_placed).toBeGreaterThan(40); // retries happened
    // The carrier's random outcomes: answered, rung out, busy, voicemail all occurred.
    expect(Object.keys(report.calls_by_outcome)).toEqual(expect.arrayContaining(['completed', 'no_answer', 'busy', 'voicemail']));
    // Retries twelve hours apart carried the campaign past the first night into the next days.
    expect(report.completed_at! > '2026-10-30').toBe(true);
  }, 600_000);
});

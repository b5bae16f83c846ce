import type { ScheduledEvent } from 'aws-lambda';
import type { ScheduledJob } from '../../../shared/jobs/definition';
import { ManualClock } from '../../../shared/local/clock';
import { Scheduler, type ScheduledHandler } from '../../../shared/local/scheduler';

function scheduledJob(over: Partial<ScheduledJob> = {}): ScheduledJob {
  return { kind: 'schedule', name: 'tick', entry: 'functions/jobs/tick.ts', description: 'test tick', rateMinutes: 1, access: {}, ...over };
}

/** A scheduler on a manual clock; `handlers` maps job names to what their entry does. */
function setup(jobs: ScheduledJob[], handlers: Record<string, ScheduledHandler>, tickSeconds = 5) {
  const clock = new ManualClock();
  const logs: string[] = [];
  const byEntry = new Map(jobs.map((j) => [j.entry, handlers[j.name]!]));
  const scheduler = new Scheduler({
    jobs,
    clock,
    tickSeconds,
    log: (line) => logs.push(line),
    loadHandler: async <H>(entry: string) => byEntry.get(entry) as H,
  });
  return { clock, scheduler, logs };
}

/** Moves the clock and lets the runs it started finish. */
async function advance(clock: ManualClock, scheduler: Scheduler, ms: number) {
  clock.advance(ms);
  await new Promise((r) => setImmediate(r));
  await scheduler.idle();
}

describe('Scheduler', () => {
  it('fires a rate-1 job once per tick, starting one tick after start', async () => {
    // Prepare
    const events: ScheduledEvent[] = [];
    const { clock, scheduler } = setup([scheduledJob()], { tick: async (event) => void events.push(event) });
    scheduler.start();
    // Act
    await advance(clock, scheduler, 4_999);
    const beforeFirstTick = events.length;
    await advance(clock, scheduler, 1);
    await advance(clock, scheduler, 5_000);
    await advance(clock, scheduler, 5_000);
    // Assess
    expect(beforeFirstTick).toBe(0);
    expect(events).toHaveLength(3);
    expect(events[0]).toMatchObject({ 'detail-type': 'Scheduled Event', detail: {} });
    expect(scheduler.stats().tick).toMatchObject({ intervalMs: 5_000, runs: 3, failures: 0 });
    await scheduler.stop();
  });

  it('stretches longer rates by the same factor: rateMinutes 3 fires every third tick', async () => {
    // Prepare
    let fast = 0;
    let slow = 0;
    const { clock, scheduler } = setup([scheduledJob(), scheduledJob({ name: 'slow', entry: 'functions/jobs/slow.ts', rateMinutes: 3 })], {
      tick: async () => void fast++,
      slow: async () => void slow++,
    }, 2);
    scheduler.start();
    // Act
    for (let i = 0; i < 6; i++) await advance(clock, scheduler, 2_000);
    // Assess
    expect(fast).toBe(6);
    expect(slow).toBe(2);
    await scheduler.stop();
  });

  it('never overlaps runs of one job: a tick during a run is skipped', async () => {
    // Prepare
    let release!: () => void;
    let runs = 0;
    const { clock, scheduler } = setup([scheduledJob()], {
      tick: () => {
        runs++;
        return runs === 1 ? new Promise<void>((r) => (release = r)) : undefined;
      },
    });
    scheduler.start();
    // Act
    clock.advance(5_000);
    await new Promise((r) => setImmediate(r));
    clock.advance(10_000);
    const whileBlocked = runs;
    release();
    await scheduler.idle();
    await advance(clock, scheduler, 5_000);
    // Assess
    expect(whileBlocked).toBe(1);
    expect(runs).toBe(2);
    expect(scheduler.stats().tick).toMatchObject({ runs: 2, skipped: 2 });
    await scheduler.stop();
  });

  it('logs a failing run and keeps the schedule going', async () => {
    // Prepare
    let runs = 0;
    const { clock, scheduler, logs } = setup([scheduledJob()], {
      tick: async () => {
        runs++;
        throw new Error('tick broke');
      },
    });
    scheduler.start();
    // Act
    await advance(clock, scheduler, 5_000);
    await advance(clock, scheduler, 5_000);
    // Assess
    expect(runs).toBe(2);
    expect(scheduler.stats().tick).toMatchObject({ runs: 2, failures: 2 });
    expect(logs).toEqual([expect.stringContaining('tick broke'), expect.stringContaining('tick broke')]);
    await scheduler.stop();
  });

  it('fires nothing after stop and waits for the run in progress', async () => {
    // Prepare
    let release!: () => void;
    let finished = 0;
    let runs = 0;
    const { clock, scheduler } = setup([scheduledJob()], {
      tick: async () => {
        runs++;
        await new Promise<void>((r) => (release = r));
        finished++;
      },
    });
    scheduler.start();
    clock.advance(5_000);
    await new Promise((r) => setImmediate(r));
    // Act
    const stopping = scheduler.stop();
    release();
    await stopping;
    clock.advance(60_000);
    await scheduler.idle();
    // Assess
    expect(runs).toBe(1);
    expect(finished).toBe(1);
    expect(clock.pending()).toBe(0);
  });

  it('runs a job on demand with runNow', async () => {
    // Prepare
    let runs = 0;
    const { scheduler } = setup([scheduledJob()], { tick: async () => void runs++ });
    // Act
    await scheduler.runNow('tick');
    // Assess
    expect(runs).toBe(1);
    expect(() => scheduler.runNow('unknown')).toThrow('Unknown scheduled job');
  });
});

import { randomUUID } from 'node:crypto';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { runAs } from '../access/enforce';
import type { ScheduledJob } from '../jobs/definition';
import { jobs as registeredJobs } from '../jobs/registry';
import { systemClock, type Clock } from './clock';
import { createHandlerLoader, type HandlerLoader } from './handler-loader';
import { createLambdaContext } from './lambda-context';

/** A scheduled Lambda handler, as the entry files of scheduled jobs export it. */
export type ScheduledHandler = (event: ScheduledEvent, context: Context) => Promise<void> | void;

export interface SchedulerOptions {
  /** Default: the scheduled jobs of `shared/jobs/registry.ts`. */
  jobs?: ScheduledJob[];
  /** Default: imports each job's entry file once. */
  loadHandler?: HandlerLoader;
  /**
   * Local length of one scheduled minute, in seconds (default: env TICK_SECONDS, else 5): a
   * job of `rateMinutes: 1` fires every `tickSeconds`, one of `rateMinutes: 10` every ten ticks.
   */
  tickSeconds?: number;
  clock?: Clock;
  log?: (line: string) => void;
}

export interface ScheduledJobStats {
  intervalMs: number;
  runs: number;
  failures: number;
  /** Ticks that found the previous run still going and so did not start another. */
  skipped: number;
  running: boolean;
  lastRunAt?: number;
}

interface JobState {
  job: ScheduledJob;
  intervalMs: number;
  timer?: unknown;
  running?: Promise<void>;
  stats: Omit<ScheduledJobStats, 'intervalMs' | 'running'>;
}

/**
 * Fires each scheduled job's handler at a fixed rate, as EventBridge Scheduler does, with
 * time compressed for local use. A job never overlaps itself: a tick that finds the previous
 * run still going is skipped. A failing run is logged and the schedule goes on.
 */
export class Scheduler {
  private readonly states: JobState[];
  private readonly clock: Clock;
  private readonly loadHandler: HandlerLoader;
  private readonly log: (line: string) => void;
  private started = false;
  private stopped = false;

  constructor(options: SchedulerOptions = {}) {
    const jobs = options.jobs ?? registeredJobs.filter((j): j is ScheduledJob => j.kind === 'schedule');
    const tickSeconds = options.tickSeconds ?? (Number(process.env.TICK_SECONDS) || 5);
    if (!(tickSeconds > 0)) throw new Error(`tickSeconds must be positive, got ${tickSeconds}.`);
    this.states = jobs.map((job) => ({
      job,
      intervalMs: job.rateMinutes * tickSeconds * 1000,
      stats: { runs: 0, failures: 0, skipped: 0 },
    }));
    this.clock = options.clock ?? systemClock;
    this.loadHandler = options.loadHandler ?? createHandlerLoader();
    this.log = options.log ?? (() => undefined);
  }

  /** Arms every job's timer; the first run comes one interval after start. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    for (const state of this.states) this.arm(state, this.clock.now() + state.intervalMs);
  }

  /** Runs a job now (unless it is already running) and resolves when that run ends. */
  runNow(name: string): Promise<void> {
    const state = this.states.find((s) => s.job.name === name);
    if (!state) throw new Error(`Unknown scheduled job "${name}".`);
    return this.fire(state);
  }

  /** Resolves when no run is in progress. */
  async idle(): Promise<void> {
    await Promise.all(this.states.map((s) => s.running));
  }

  /** Disarms every timer and waits for runs in progress. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const state of this.states) {
      if (state.timer !== undefined) this.clock.clearTimeout(state.timer);
      state.timer = undefined;
    }
    await this.idle();
  }

  stats(): Record<string, ScheduledJobStats> {
    return Object.fromEntries(
      this.states.map((s) => [s.job.name, { intervalMs: s.intervalMs, running: !!s.running, ...s.stats }]),
    );
  }

  /** Fixed rate: the next tick is due one interval after this one, however long the run takes. */
  private arm(state: JobState, dueAt: number): void {
    if (this.stopped) return;
    state.timer = this.clock.setTimeout(() => {
      state.timer = undefined;
      this.arm(state, dueAt + state.intervalMs);
      void this.fire(state);
    }, dueAt - this.clock.now());
  }

  private fire(state: JobState): Promise<void> {
    if (state.running) {
      state.stats.skipped++;
      return state.running;
    }
    state.running = this.run(state).finally(() => {
      state.running = undefined;
    });
    return state.running;
  }

  private async run(state: JobState): Promise<void> {
    const { job } = state;
    const now = this.clock.now();
    state.stats.runs++;
    state.stats.lastRunAt = now;
    try {
      const handler = await this.loadHandler<ScheduledHandler>(job.entry);
      const context = createLambdaContext({
        functionName: job.name,
        timeoutMs: (job.timeoutSeconds ?? 60) * 1000,
        memoryMb: job.memoryMb,
        now: () => this.clock.now(),
      });
      await runAs({ name: job.name, access: job.access }, () => handler(scheduledEvent(job.name, now), context));
    } catch (err) {
      state.stats.failures++;
      this.log(`scheduled job ${job.name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    }
  }
}

/** The event EventBridge sends for a scheduled invocation. */
function scheduledEvent(name: string, time: number): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.scheduler',
    account: '000000000000',
    time: new Date(time).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'local',
    resources: [`arn:aws:scheduler:local:000000000000:schedule/default/${name}`],
    detail: {},
  };
}

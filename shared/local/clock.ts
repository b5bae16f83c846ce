/**
 * Time for the local queue runner and scheduler. Both take a clock so tests move time by
 * hand (deterministic, instant) while the local runtime uses real timers.
 */
export interface Clock {
  now(): number;
  /** Calls `fn` after `ms`; the returned handle is for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Longest delay Node's setTimeout honours; it fires a longer one after 1 ms. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Real time. Timers are unref'd: pending redeliveries or ticks never keep a process alive. A delay
 * beyond Node's limit (about 24.8 days; an hourly job under the test platform's day-long ticks)
 * is waited out in steps rather than fired at once.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const handle: { timer?: NodeJS.Timeout } = {};
    const wait = (left: number) => {
      handle.timer = setTimeout(() => (left > MAX_TIMER_MS ? wait(left - MAX_TIMER_MS) : fn()), Math.min(Math.max(0, left), MAX_TIMER_MS));
      handle.timer.unref();
    };
    wait(ms);
    return handle;
  },
  clearTimeout(handle) {
    clearTimeout((handle as { timer?: NodeJS.Timeout } | undefined)?.timer);
  },
};

interface ManualTimer {
  id: number;
  at: number;
  fn: () => void;
}

/** A clock that moves only when told to: `advance(ms)` fires every timer due by then, in order. */
export class ManualClock implements Clock {
  private current: number;
  private timers: ManualTimer[] = [];
  private nextId = 1;

  constructor(start = Date.UTC(2030, 0, 1)) {
    this.current = start;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer = { id: this.nextId++, at: this.current + Math.max(0, ms), fn };
    this.timers.push(timer);
    return timer.id;
  }

  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }

  /** Moves time forward, firing due timers one by one (a timer set while firing fires too if due). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.current = Math.max(this.current, due.at);
      due.fn();
    }
    this.current = target;
  }

  /** When the earliest timer is due (a simulation jumps straight there), or undefined when none is set. */
  nextDueAt(): number | undefined {
    return this.timers.length ? Math.min(...this.timers.map((t) => t.at)) : undefined;
  }

  /** Timers not yet fired (for assertions about what is scheduled). */
  pending(): number {
    return this.timers.length;
  }
}

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

/** Real time. Timers are unref'd: pending redeliveries or ticks never keep a process alive. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(fn, ms) {
    const timer = setTimeout(fn, Math.max(0, ms));
    timer.unref();
    return timer;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
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

  /** Timers not yet fired (for assertions about what is scheduled). */
  pending(): number {
    return this.timers.length;
  }
}

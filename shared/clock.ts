/**
 * The time domain rules read. Real time by default (in Lambda, always); the local runtime and
 * the campaign simulation install a manual clock (shared/local/clock.ts) so a week of calling
 * windows, retry gaps and call lengths passes in minutes with every rule reading one time.
 * Held on `globalThis`, so every copy of this module in a process (handlers loaded by the local
 * runtime, scripts) reads the same source.
 */
export interface TimeSource {
  now(): number;
}

const SOURCE = Symbol.for('vap.timeSource');
type Holder = { [SOURCE]?: TimeSource };

/** Installs the time source for this process; `undefined` returns to real time. */
export function installTimeSource(source: TimeSource | undefined): void {
  (globalThis as Holder)[SOURCE] = source;
}

/** The current time in epoch milliseconds. */
export function clockMs(): number {
  const source = (globalThis as Holder)[SOURCE];
  return source ? source.now() : Date.now();
}

/** The current time. */
export const clockNow = (): Date => new Date(clockMs());

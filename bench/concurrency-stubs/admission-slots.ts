/**
 * bench/concurrency-stubs: shared/domain/concurrency/slots.ts as the platform runs it, except that
 * bench/concurrency.ts can take the admission out of a new call (see register.cjs). While
 * `globalThis.__benchAdmission.on` is false, acquireSlotWrites adds nothing to the creating
 * transaction (no counter increment, no slot item: the request as it was before limits existed)
 * and remembers the call, whose end then frees nothing (releaseSlotWrites adds nothing for it).
 * While it is true every export is the real one, so both sides of the A/B run this same module in
 * the same process and differ only by the admission's writes.
 */
import * as real from '../../shared/domain/concurrency/slots';

export * from '../../shared/domain/concurrency/slots';

interface BenchAdmission {
  /** true: the real admission writes; false: none. */
  on: boolean;
  /** Calls created without admission writes. */
  skipped: Set<string>;
}

const state = ((globalThis as { __benchAdmission?: BenchAdmission }).__benchAdmission ??= { on: true, skipped: new Set() });

export function acquireSlotWrites(...args: Parameters<typeof real.acquireSlotWrites>): ReturnType<typeof real.acquireSlotWrites> {
  if (state.on) return real.acquireSlotWrites(...args);
  state.skipped.add(args[1]);
  return [];
}

export function releaseSlotWrites(...args: Parameters<typeof real.releaseSlotWrites>): ReturnType<typeof real.releaseSlotWrites> {
  return state.skipped.has(args[1]) ? [] : real.releaseSlotWrites(...args);
}

import { readRelayState, turnSignals, type RelayState } from './state';

/**
 * A turn waits for the turn before it to be written (turn-taking.ts), and `$disconnect` for the
 * turn still in flight (call-ending.ts): told at once when the write happens in this process, else
 * read a few times a second, bounded.
 */

/** Longest a turn waits for the one before it to be written (it stops at once when superseded; this bounds a crashed one). */
export const PREVIOUS_TURN_WAIT_MS = 5_000;
/** How often a waiting turn reads whether the turn before it was written. */
export const TURN_WAIT_POLL_MS = 250;

/** Turns written by this process, told to the turns waiting for them here (elsewhere they read). */
const written = new Map<string, Set<() => void>>();
export const tellWritten = (connectionId: string) => written.get(connectionId)?.forEach((w) => w());

/** The state once turn `done` is written, waiting at most PREVIOUS_TURN_WAIT_MS (told at once in this process, else read a few times a second). */
export async function afterTurn(read: RelayState, done: number): Promise<RelayState | undefined> {
  if (read.turn_done >= done) return read;
  const id = read.connection_id;
  const deadline = Date.now() + PREVIOUS_TURN_WAIT_MS;
  let wake: () => void = () => undefined;
  // A write told while the read below was in flight is not lost: the loop reads again at once.
  let told = false;
  const set = written.get(id) ?? new Set();
  written.set(id, set);
  const waker = () => {
    told = true;
    wake();
  };
  set.add(waker);
  try {
    while (Date.now() < deadline) {
      told = false;
      const s = await turnSignals(id, true);
      if (!s) return undefined;
      if (s.turn_done >= done) return readRelayState(id);
      if (told) continue;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(TURN_WAIT_POLL_MS, Math.max(0, deadline - Date.now())));
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    return readRelayState(id);
  } finally {
    set.delete(waker);
    if (!set.size) written.delete(id);
  }
}

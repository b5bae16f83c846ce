import { LlmError, type LlmPort } from '../../adapters/llm/port';
import { sendToRelay, type SendOutcome } from '../../adapters/relay-connections';
import { clockMs } from '../../clock';
import { TextChannel } from '../common/stream-body';
import { heardOf } from './interruption';
import type { RelayOutbound } from './protocol';
import { turnSignals, type RelayState } from './state';

/**
 * One turn's reply on its way to the caller, one reply at a time as Twilio's own SDK does: the
 * model's text pushed as it comes (a TextChannel), sent as `text` tokens (`last: false`) in order,
 * `last: true` at the end. The reply stops when the caller interrupts it (the words heard are the
 * start of what it sent), when a newer utterance supersedes its turn, or when a send fails; a
 * stopped reply aborts its model request and, when something went out, closes the token stream
 * with `{token: "", last: true}`. Deployed, the interruption or the newer prompt arrives in another
 * invocation, perhaps in another container: the reply reads for them every INTERRUPT_POLL_MS; in
 * the same process it hears them at once.
 */

/** How often a speaking turn reads whether it was interrupted or superseded (a few times a second at most). */
export const INTERRUPT_POLL_MS = 200;

export type StopReason = 'interrupted' | 'superseded' | 'gone' | 'failed' | 'abandoned';

/** A reply's model request stopped because the reply did (not a model failure: no apology). */
export class ReplyCancelled extends LlmError {
  constructor(provider: LlmPort['name']) {
    super('timeout', 'The reply was stopped', { provider });
  }
}

/** A signal to the replies of one connection running in this process. */
type Signal = { kind: 'interrupt'; turn: number; heard: string } | { kind: 'supersede'; before: number };
const listeners = new Map<string, Set<(s: Signal) => void>>();

/** Tells the replies of `connectionId` running in this process (an interruption, a newer utterance). */
export function signalReplies(connectionId: string, signal: Signal): void {
  for (const listener of listeners.get(connectionId) ?? []) listener(signal);
}

/** Sends one message of the session (never throws: sendToRelay). */
export const send = (state: Pick<RelayState, 'connection_id'>, message: RelayOutbound): Promise<SendOutcome> => sendToRelay(state.connection_id, message);

export class Reply {
  /** Everything the turn said (sent or not). */
  text = '';
  /** What went out. */
  sent = '';
  /** When the first token went out (ms, the platform's clock: the transcript's time). */
  firstMs: number | undefined;
  /** The same moment on this process's own clock (Date.now): where the reply's `latency_ms.e2e` ends. */
  firstSentMs: number | undefined;
  stopped: StopReason | undefined;
  /** Aborted when the reply stops: its model request ends at once. */
  readonly abort = new AbortController();
  private readonly channel = new TextChannel();
  private readonly sending: Promise<void>;
  private lastMessage: string | undefined;
  private poll: NodeJS.Timeout | undefined;
  private readonly listener = (s: Signal) => this.hear(s);

  /** `gate`: resolves true once the turn's claim is written and the state the turn started from is the current one. */
  constructor(private readonly state: RelayState, readonly turn: number, private readonly gate: Promise<boolean> = Promise.resolve(true)) {
    let set = listeners.get(state.connection_id);
    if (!set) listeners.set(state.connection_id, (set = new Set()));
    set.add(this.listener);
    this.sending = this.run();
  }

  /** A piece of a reply's text; a new reply of the turn (after tool calls) is set apart by a space. */
  push(delta: string, messageId = ''): void {
    if (!delta || this.stopped) return;
    if (this.lastMessage !== undefined && messageId !== this.lastMessage && this.text && !/\s$/.test(this.text) && !/^\s/.test(delta)) delta = ` ${delta}`;
    this.lastMessage = messageId;
    this.text += delta;
    this.channel.push(delta);
  }

  /** Whether an interruption with these words heard is of this reply. */
  owns(heard: string): boolean {
    return this.firstMs !== undefined && heardOf(heard, this.sent);
  }

  /** Stops the reply (the first reason stays): nothing more goes out and its model request is aborted. */
  stop(reason: StopReason): void {
    if (this.stopped) return;
    this.stopped = reason;
    this.abort.abort();
    this.channel.end();
  }

  private hear(s: Signal): void {
    if (s.kind === 'supersede' && this.turn < s.before) this.stop('superseded');
    if (s.kind === 'interrupt' && s.turn === this.turn && this.owns(s.heard)) this.stop('interrupted');
  }

  /** Whether the turn may act (send, run tools): its claim held. */
  ready(): Promise<boolean> {
    return this.gate;
  }

  private watch(): void {
    let reading = false;
    this.poll = setInterval(() => {
      if (reading || this.stopped) return;
      reading = true;
      turnSignals(this.state.connection_id).then(
        (s) => {
          reading = false;
          if (!s) return this.stop('gone');
          if (s.turn > this.turn) this.stop('superseded');
          else if (s.pending_interrupt?.turn === this.turn) this.hear({ kind: 'interrupt', turn: this.turn, heard: s.pending_interrupt.heard });
        },
        () => void (reading = false),
      );
    }, INTERRUPT_POLL_MS);
    this.poll.unref?.();
  }

  private async run(): Promise<void> {
    for await (const token of this.channel) {
      if (this.stopped) break;
      if (this.firstMs === undefined) {
        // The first token waits for the claim (written while the model worked), so an interruption always finds the turn.
        if (!(await this.gate)) {
          this.stop('abandoned');
          break;
        }
        if (this.stopped) break;
        this.firstMs = clockMs();
        this.firstSentMs = Date.now();
        this.watch();
      }
      const outcome = await send(this.state, { type: 'text', token, last: false });
      if (outcome !== 'sent') {
        this.stop(outcome);
        break;
      }
      this.sent += token;
    }
    if (this.firstMs === undefined && !this.stopped && !(await this.gate)) this.stop('abandoned');
    if (this.firstMs === undefined || this.stopped === 'gone' || this.stopped === 'abandoned') return;
    // A whole reply ends with `last: true`; a stopped one too (Twilio's SDK closes the interrupted stream so).
    await send(this.state, { type: 'text', token: '', last: true });
  }

  /** Ends the reply: resolves once its last token (and `last: true`) went out. */
  async finish(): Promise<void> {
    this.channel.end();
    try {
      await this.sending;
    } finally {
      clearInterval(this.poll);
      const set = listeners.get(this.state.connection_id);
      set?.delete(this.listener);
      if (set && !set.size) listeners.delete(this.state.connection_id);
    }
  }
}

/**
 * The model port for one reply: its request carries the reply's `signal` (the adapter ends the
 * HTTP request to the model when the reply stops: its connection closed, its stream no longer
 * read), rejects with ReplyCancelled as soon as the reply stops without waiting for the adapter,
 * and no delta of it lands after.
 */
export function cancellable(port: LlmPort, signal: AbortSignal): LlmPort {
  return {
    name: port.name,
    complete(request) {
      if (signal.aborted) return Promise.reject(new ReplyCancelled(port.name));
      return new Promise((resolve, reject) => {
        const onAbort = () => reject(new ReplyCancelled(port.name));
        signal.addEventListener('abort', onAbort, { once: true });
        const onDelta = request.onDelta;
        port
          .complete({ ...request, signal: request.signal ? AbortSignal.any([request.signal, signal]) : signal, ...(onDelta ? { onDelta: (t: string) => void (signal.aborted || onDelta(t)) } : {}) })
          .then(resolve, reject)
          .finally(() => signal.removeEventListener('abort', onAbort));
      });
    },
  };
}

import type { VoiceEndReason } from '../shared/domain/calls/voice-session';
import type { CarrierCall } from './carrier';
import type { EndRequest } from './tool-calls';
import type { ToolsBridge } from './tools-bridge';
import type { TranscriptRecorder } from './transcript';

/**
 * How a call ends when the runtime ends it: `end_call` and `transfer_call` (once the agent's words
 * before them have played), a silent caller (reminders, then `end_call_after_silence`), the
 * maximum duration (a short goodbye, then the hang-up), a voicemail left. An end is asked for
 * (`CallEnding.request`), waits until nothing is said, generated or run, and is then carried out
 * (`carryOutEnd`): the conversation is written first, then the carrier is told.
 */

/** Longest an end waits for the agent's last words to play (a carrier that never echoes a mark). */
export const END_DEADLINE_MS = 20_000;

export interface PendingEnd {
  kind: 'hangup' | 'transfer';
  reason?: VoiceEndReason;
  to?: string;
  /** A warm transfer: the caller waits in a conference while the platform briefs the person (the destination's description, the model's reason); the call goes on. */
  warm?: { description?: string; reason?: string };
  /** Not called off by the caller speaking (voicemail, the maximum duration, silence). */
  firm?: boolean;
  /** The built-in that asked for the end, run when the end happens. */
  tool?: EndRequest;
}

// ---- silence ----

export interface SilenceRules {
  /** `reminder_trigger_ms`: 0 turns reminders off. */
  triggerMs: number;
  /** `reminder_max_count`. */
  maxReminders: number;
  /** `end_call_after_silence`. */
  endAfterSilence: boolean;
  /** The silence that ends the call when `triggerMs` is 0 (`VOICE_SILENCE_END_MS`). */
  endSilenceMs: number;
}

/**
 * What the next silence leads to, after `remindersSent` reminders in a row: a reminder after
 * `reminder_trigger_ms` while any are left; then, with `end_call_after_silence`, the hang-up after
 * one more `reminder_trigger_ms` (or `endSilenceMs` when reminders are off); else nothing.
 */
export function nextSilence(rules: SilenceRules, remindersSent: number): { afterMs: number; then: 'remind' | 'end' } | null {
  if (rules.triggerMs > 0 && remindersSent < rules.maxReminders) return { afterMs: rules.triggerMs, then: 'remind' };
  if (rules.endAfterSilence) return { afterMs: rules.triggerMs > 0 ? rules.triggerMs : rules.endSilenceMs, then: 'end' };
  return null;
}

/** The silence timer: started when the agent is idle, stopped by anything said; counts reminders until the caller speaks. */
export class SilenceWatch {
  private timer: NodeJS.Timeout | undefined;
  private reminders = 0;

  constructor(private readonly rules: SilenceRules, private readonly on: { remind(): void; end(): void }) {}

  start(): void {
    this.stop();
    const next = nextSilence(this.rules, this.reminders);
    if (!next) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (next.then === 'remind') {
        this.reminders++;
        this.on.remind();
      } else {
        this.on.end();
      }
    }, next.afterMs);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** The caller spoke: the reminders start again. */
  callerSpoke(): void {
    this.stop();
    this.reminders = 0;
  }
}

// ---- the pending end and the maximum duration ----

export class CallEnding {
  pending: PendingEnd | null = null;
  private deadline: NodeJS.Timeout | undefined;
  private duration: NodeJS.Timeout | undefined;

  /** `due`: the end must happen now (its deadline passed). */
  constructor(private readonly due: () => void) {}

  /** An end waits for the agent's words to play; with `deadlineMs`, it happens then at the latest. */
  request(end: PendingEnd, deadlineMs?: number): void {
    this.pending = end;
    clearTimeout(this.deadline);
    if (deadlineMs !== undefined) this.deadline = setTimeout(() => this.due(), deadlineMs);
  }

  /** The caller spoke: an end that is not firm is called off (true when one was). */
  callOff(): boolean {
    if (!this.pending || this.pending.firm) return false;
    this.pending = null;
    clearTimeout(this.deadline);
    return true;
  }

  /** The end is being carried out (or was refused): nothing waits any more. */
  take(): PendingEnd | null {
    const end = this.pending;
    this.pending = null;
    clearTimeout(this.deadline);
    return end;
  }

  /** Calls `reached` when the call has lasted `maxMs` (counted from `startMs`). */
  limit(maxMs: number, startMs: number, reached: () => void): void {
    if (maxMs > 0) this.duration = setTimeout(reached, Math.max(0, maxMs - (Date.now() - startMs)));
  }

  clear(): void {
    clearTimeout(this.deadline);
    clearTimeout(this.duration);
  }
}

// ---- carrying an end out ----

export interface EndDeps {
  tools: ToolsBridge | undefined;
  transcript: TranscriptRecorder;
  carrier: CarrierCall;
  /** The transfer's dial timeout. */
  ringMs: number;
  /** Writes the conversation with the end's reason and error; `streamEnded`: the call is over at the carrier (the agent hung up). */
  record(o: { reason?: VoiceEndReason; error?: string; streamEnded?: boolean }): Promise<void>;
  /** Closes the model's session and the carrier's stream. */
  close(): void;
  /**
   * Starts a warm transfer on the platform (warm-transfer.ts: the transfer recorded, the human
   * dialled, the briefing made from the conversation written just before): the TwiML that moves
   * the caller into the conference, or why it could not start.
   */
  startWarm(to: string, warm: { description?: string; reason?: string }): Promise<{ ok: true; callerTwiml: string; transferIndex: number } | { ok: false; error: string }>;
  /** The caller could not be moved: the transfer is settled `failed` where it stands (the person, if they answer, hears the caller is gone). */
  abandonWarm(transferIndex: number): Promise<void>;
  /** The caller left this stream for the transfer's conference: the session writes nothing more (the platform owns the call now). */
  handedOver(): void;
}

/**
 * Carries out an end. A built-in runs first; one that refuses (`transfer_call` with no number)
 * returns why, and the call goes on. Else the conversation is written, then the carrier transfers
 * (a failed transfer is recorded and hung up) or hangs up, and a hang-up is recorded as the
 * stream's end.
 */
export async function carryOutEnd(end: PendingEnd, deps: EndDeps): Promise<{ refused: string } | undefined> {
  if (end.tool && deps.tools) {
    const at = Date.now();
    const run = await deps.tools.run(end.tool.name, end.tool.callId, end.tool.args);
    deps.transcript.tool(end.tool.name, end.tool.args, run.result, at);
    const effect = run.effect;
    if (effect?.transferTo && effect.transferMode === 'warm') {
      Object.assign(end, { kind: 'transfer', to: effect.transferTo, warm: { description: effect.transferDescription, reason: effect.transferReason } });
    } else if (run.effect?.transferTo) Object.assign(end, { kind: 'transfer', to: run.effect.transferTo, reason: 'transferred' });
    else if (!run.effect?.end) return { refused: `${end.tool.name} did not run: ${JSON.stringify(run.result)}. Tell the caller and go on.` };
  }
  if (end.kind === 'transfer' && end.warm && end.to) return warmTransfer(end.to, end.warm, deps);
  await deps.record({ reason: end.reason });
  if (end.kind === 'transfer' && end.to) {
    if (await deps.carrier.transfer(end.to, deps.ringMs)) return undefined; // the carrier stops the stream; its end is recorded then
    await deps.record({ reason: end.reason, error: `The transfer to ${end.to} failed at the carrier` });
  }
  // Without a carrier API (or when it fails), closing the stream ends <Connect>, and with no more instructions the call hangs up.
  await deps.carrier.hangUp();
  deps.close();
  await deps.record({ reason: end.reason, streamEnded: true });
  return undefined;
}

/**
 * A warm transfer: the conversation so far is written without ending the call (the briefing is
 * made from it), the platform starts the transfer, and the caller's live call is given the TwiML
 * that moves it into the conference; the call leaves `<Connect>`, so the carrier stops this
 * stream. The call is not ended or marked here: the platform ends it `transferred` once the human
 * accepts, or sends the caller back to a new stream (`resume`) when they do not. A transfer that
 * cannot start (or a caller the carrier cannot move) is told to the model, and the call goes on.
 */
async function warmTransfer(to: string, warm: { description?: string; reason?: string }, deps: EndDeps): Promise<{ refused: string } | undefined> {
  await deps.record({});
  const started = await deps.startWarm(to, warm);
  if (!started.ok) return { refused: `The transfer to ${to} could not be started (${started.error}). Tell the caller, offer to take a message or arrange a callback, and go on.` };
  if (!(await deps.carrier.redirect(started.callerTwiml))) {
    await deps.abandonWarm(started.transferIndex);
    return { refused: `The caller could not be put on hold for the transfer to ${to}. Tell the caller you could not transfer them, offer to take a message or arrange a callback, and go on.` };
  }
  deps.handedOver();
  return undefined;
}

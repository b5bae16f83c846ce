import { telephony } from '../shared/adapters/telephony';
import type { LiveCallChange } from '../shared/adapters/telephony/port';
import { recordConversation, type VoiceEndReason } from '../shared/domain/calls/voice-session';
import { logger } from '../shared/logger';
import type { CallContext } from './call-context';
import { MAX_BUFFERED_FRAMES, type VoiceSettings } from './config';
import { base64Bytes, Playout } from './playout';
import { RealtimeClient, sessionUpdate, type ServerEvent } from './realtime-client';
import { parseArguments, toolsBridge, type ToolsBridge } from './tools-bridge';
import { TranscriptRecorder } from './transcript';
import type { TwilioFrame, TwilioTransport } from './twilio-transport';

/**
 * One call: the carrier's stream on one side, the model's session on the other, and the agent's
 * rules in between (a LiveKit/Pipecat-style session object). Audio passes through untouched both
 * ways (μ-law 8 kHz base64, as each side sends it). Everything else is an explicit event:
 *
 * - the caller starts speaking (`speech_started`) while agent audio is unplayed → `clear` the
 *   carrier, `conversation.item.truncate` at what was heard (playout.ts), and the generation is
 *   interrupted: its tool calls are not run, a tool still running has its result dropped, and an
 *   `end_call`/`transfer_call` waiting for its goodbye to play is called off;
 * - a response is done → its tool calls run (executor), their outputs go back, and the model is
 *   asked to respond (`response.create`), so the agent never falls silent after a tool;
 * - the agent's audio has played (the last mark comes back) and nothing else is under way → a
 *   pending end happens now, or the silence timer starts (reminders, then `end_call_after_silence`);
 * - the maximum duration passes → a short goodbye, then the hang-up (not interruptible);
 * - the model fails → the carrier speaks an apology and hangs up; the call keeps why.
 */

/** Longest an end waits for the agent's last words to play (a carrier that never echoes a mark). */
const END_DEADLINE_MS = 20_000;
/** Model errors that concern one request and leave the session usable. */
const BENIGN_ERRORS = new Set(['response_cancel_not_active', 'conversation_already_has_active_response']);
/** Client events whose failure is not the session's (a truncate past the audio, a late cancel). */
const BENIGN_EVENT_PREFIX = 'benign_';

export const APOLOGY_TWIML = '<Response><Say>Sorry, we are having technical difficulties and have to end this call. Please call again later. Goodbye.</Say><Hangup/></Response>';

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** A transfer: the live call's new instructions dial the number (the agent's ring duration as the dial timeout). */
export function transferTwiml(to: string, ringMs: number): string {
  const timeout = Math.max(5, Math.min(600, Math.round((ringMs || 30_000) / 1000)));
  return `<Response><Dial timeout="${timeout}">${xml(to)}</Dial></Response>`;
}

interface ResponseState {
  interrupted: boolean;
  hadAudio: boolean;
  calls: Map<string, { name: string; arguments: string }>;
}

interface PendingEnd {
  kind: 'hangup' | 'transfer';
  reason?: VoiceEndReason;
  to?: string;
  /** Not called off by the caller speaking (voicemail, the maximum duration). */
  firm?: boolean;
  /** The built-in that asked for the end, run when the end happens. */
  tool?: { callId: string; name: string; args: Record<string, unknown> };
}

export interface SessionInput {
  carrier: TwilioTransport;
  context: CallContext;
  settings: VoiceSettings;
  /** Twilio's AnsweredBy (`human`, `machine_end_beep`, …), when detection ran. */
  answeredBy?: string;
  /** The carrier's call id (Twilio CallSid). */
  providerCallId?: string;
  /** When the stream started (ms): transcript times count from it. */
  startMs: number;
}

export class CallSession {
  readonly callId: string;
  readonly orgId: string;
  /** Resolves when the session is over and the call written. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;

  private readonly model = new RealtimeClient();
  private readonly playout = new Playout();
  private readonly transcript: TranscriptRecorder;
  private tools: ToolsBridge | undefined;
  private state: 'connecting' | 'live' | 'ending' | 'closed' = 'connecting';
  private buffered: string[] = [];
  private readonly responses = new Map<string, ResponseState>();
  private currentResponse: string | null = null;
  /** A `response.create` sent whose `response.created` has not come yet. */
  private awaitingResponse = false;
  private readonly itemStartMs = new Map<string, number>();
  private readonly itemResponse = new Map<string, string>();
  private readonly speechStartMs = new Map<string, number>();
  private userSpeaking = false;
  private readonly running = new Map<string, { cancelled: boolean }>();
  private pendingEnd: PendingEnd | null = null;
  private endReason: VoiceEndReason | undefined;
  private errorMessage: string | undefined;
  private reminders = 0;
  private silenceTimer: NodeJS.Timeout | undefined;
  private durationTimer: NodeJS.Timeout | undefined;
  private endDeadline: NodeJS.Timeout | undefined;
  private recordedVersion = -1;
  private voicemail = false;
  private eventSeq = 0;

  constructor(private readonly input: SessionInput) {
    this.callId = input.context.call.id;
    this.orgId = input.context.call.organization_id;
    this.transcript = new TranscriptRecorder(input.startMs);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
  }

  private get agent() {
    return this.input.context.agent;
  }

  /** Opens the model's session and starts the call's course (begin message, voicemail or listening). */
  async start(): Promise<void> {
    const { context, settings } = this.input;
    const call = context.call;
    this.voicemail = !!this.input.answeredBy?.startsWith('machine') && !!(call.voicemail_detection || this.agent.enable_voicemail_detection);
    if (this.voicemail && !context.voicemailMessage) {
      // A machine answered and there is nothing to leave: hang up at once.
      this.pendingEnd = { kind: 'hangup', reason: 'voicemail', firm: true };
      return this.executeEnd();
    }
    try {
      this.tools = await toolsBridge(context);
      this.model.onEvent = (event) => this.onModelEvent(event);
      this.model.onFailure = (reason) => void this.fail(reason);
      await this.model.connect({
        baseUrl: settings.realtimeBaseUrl,
        apiKey: settings.realtimeApiKey,
        model: this.agent.s2s_model || settings.defaultModel,
        protocol: settings.realtimeProtocol,
        timeoutMs: settings.connectTimeoutMs,
      });
    } catch (err) {
      return this.fail(`the model could not be reached: ${(err as Error).message}`);
    }
    if (this.state !== 'connecting') return this.model.close(); // the caller hung up meanwhile
    this.state = 'live';
    this.model.send(
      sessionUpdate(settings.realtimeProtocol, {
        instructions: context.instructions,
        voice: this.agent.voice_id || undefined,
        temperature: this.agent.temperature,
        tools: this.voicemail ? [] : this.tools.definitions,
        transcriptionModel: settings.transcriptionModel,
        vad: !this.voicemail,
      }),
    );
    if (this.voicemail) {
      this.pendingEnd = { kind: 'hangup', reason: 'voicemail', firm: true };
      this.respond(`You reached a voicemail. Say exactly the following, word for word, and nothing else: ${context.voicemailMessage}`);
      return;
    }
    for (const frame of this.buffered) this.model.appendAudio(frame);
    this.buffered = [];
    const maxMs = call.max_call_duration_ms ?? this.agent.max_call_duration_ms;
    if (maxMs > 0) this.durationTimer = setTimeout(() => this.onMaxDuration(), Math.max(0, maxMs - (Date.now() - this.input.startMs)));
    if (this.agent.start_speaker !== 'user') {
      this.respond(context.beginMessage ? `Greet the caller by saying exactly the following, word for word, and nothing else: ${context.beginMessage}` : undefined);
    } else {
      this.maybeIdle();
    }
  }

  /** One message from the carrier. */
  onCarrierFrame(frame: TwilioFrame): void {
    switch (frame.event) {
      case 'media':
        if (this.voicemail) return;
        if (this.state === 'live') this.model.appendAudio(frame.media.payload);
        else if (this.state === 'connecting' && this.buffered.length < MAX_BUFFERED_FRAMES) this.buffered.push(frame.media.payload);
        return;
      case 'mark':
        if (this.playout.echoed(frame.mark.name)) this.maybeIdle();
        return;
      case 'stop':
        void this.finish();
        return;
      default:
        return;
    }
  }

  /** The runtime is stopping (a deploy or scale-in past its drain time): the call ends like a model failure, with that reason. */
  shutdown(): Promise<void> {
    return this.fail('the voice runtime was stopped (deploy or scale-in) before the call ended');
  }

  /** The carrier's socket closed (after `stop`, or without it). */
  onCarrierClosed(): void {
    void this.finish();
  }

  // ---- the model's events ----

  private onModelEvent(e: ServerEvent): void {
    if (this.state === 'closed') return;
    switch (e.type) {
      case 'input_audio_buffer.speech_started':
        return this.onSpeechStarted(e);
      case 'input_audio_buffer.speech_stopped':
        this.userSpeaking = false;
        return;
      case 'conversation.item.input_audio_transcription.completed':
        this.transcript.say('user', String(e.transcript ?? ''), this.speechStartMs.get(e.item_id));
        return;
      case 'response.created': {
        const id = e.response?.id ?? `r${++this.eventSeq}`;
        this.awaitingResponse = false;
        this.currentResponse = id;
        this.responses.set(id, { interrupted: false, hadAudio: false, calls: new Map() });
        this.clearSilence();
        return;
      }
      case 'response.output_audio.delta':
        return this.onAudio(e);
      case 'response.output_audio_transcript.done':
        // Only words the caller could hear some of are the agent's (a generation cut before any audio said nothing).
        if (this.itemStartMs.has(e.item_id)) this.transcript.say('agent', String(e.transcript ?? ''), this.itemStartMs.get(e.item_id));
        return;
      case 'response.function_call_arguments.done': {
        const r = this.responses.get(e.response_id ?? this.currentResponse ?? '');
        if (r && e.call_id) r.calls.set(e.call_id, { name: String(e.name ?? ''), arguments: String(e.arguments ?? '{}') });
        return;
      }
      case 'response.done':
        return void this.onResponseDone(e);
      case 'error':
        return this.onModelError(e);
      default:
        return;
    }
  }

  private onAudio(e: ServerEvent): void {
    const responseId = e.response_id ?? this.currentResponse ?? '';
    const r = this.responses.get(responseId);
    // Audio of an interrupted generation still in flight from the model is never played.
    if (r?.interrupted || this.state !== 'live' || typeof e.delta !== 'string') return;
    if (r) r.hadAudio = true;
    const itemId = String(e.item_id ?? responseId);
    if (!this.itemStartMs.has(itemId)) this.itemStartMs.set(itemId, Date.now());
    this.itemResponse.set(itemId, responseId);
    this.input.carrier.sendMedia(e.delta);
    this.input.carrier.sendMark(this.playout.sent(itemId, base64Bytes(e.delta)));
  }

  private onSpeechStarted(e: ServerEvent): void {
    this.userSpeaking = true;
    this.speechStartMs.set(e.item_id, Date.now());
    this.clearSilence();
    this.reminders = 0;
    if (this.voicemail) return;
    const cut = this.playout.interrupt();
    if (cut) {
      this.input.carrier.clear();
      this.model.send({ type: 'conversation.item.truncate', event_id: this.benignId(), item_id: cut.itemId, content_index: 0, audio_end_ms: cut.audioEndMs });
      const owner = this.itemResponse.get(cut.itemId);
      const ownerState = owner ? this.responses.get(owner) : undefined;
      if (ownerState) ownerState.interrupted = true;
    }
    // The generation under way is cut too (the server cancels it: interrupt_response).
    const current = this.currentResponse ? this.responses.get(this.currentResponse) : undefined;
    if (current) current.interrupted = true;
    if (cut || this.currentResponse) {
      for (const token of this.running.values()) token.cancelled = true;
      if (this.pendingEnd && !this.pendingEnd.firm) {
        this.pendingEnd = null;
        clearTimeout(this.endDeadline);
        this.note('The caller spoke before the call could end or be transferred, so it goes on. Listen and answer them.');
      }
    }
  }

  private async onResponseDone(e: ServerEvent): Promise<void> {
    const response = e.response ?? {};
    const id: string = response.id ?? this.currentResponse ?? '';
    const r = this.responses.get(id) ?? { interrupted: false, hadAudio: false, calls: new Map() };
    if (this.currentResponse === id) this.currentResponse = null;
    for (const out of Array.isArray(response.output) ? response.output : []) {
      if (out?.type === 'function_call' && out.call_id && !r.calls.has(out.call_id)) r.calls.set(out.call_id, { name: String(out.name ?? ''), arguments: String(out.arguments ?? '{}') });
    }
    const completed = (response.status ?? 'completed') === 'completed';
    if (r.calls.size && completed && r.interrupted) {
      // The caller cut this generation off: its tool calls are never run (an `end_call` must not hang up on them).
      for (const callId of r.calls.keys()) this.toolOutput(callId, { error: 'not run: the caller interrupted' });
    } else if (r.calls.size && completed && this.state === 'live') {
      await this.runTools(r);
    }
    // Kept (a few per call) while its audio may still be playing: a later interruption marks it.
    this.maybeIdle();
  }

  private onModelError(e: ServerEvent): void {
    const error = e.error ?? {};
    if (BENIGN_ERRORS.has(error.code) || String(error.event_id ?? '').startsWith(BENIGN_EVENT_PREFIX)) {
      logger.info('The model refused a request; the call goes on', { call_id: this.callId, code: error.code, message: error.message });
      if (this.awaitingResponse && error.code === 'conversation_already_has_active_response') this.awaitingResponse = false;
      return;
    }
    void this.fail(`the model reported an error: ${error.message ?? error.code ?? 'unknown'}`);
  }

  // ---- tools ----

  private async runTools(r: ResponseState): Promise<void> {
    const calls = [...r.calls.entries()];
    // `end_call` / `transfer_call` run only once what the agent said before them has played, and
    // never if the caller speaks first; the model is told the end is pending.
    const ending = calls.find(([, c]) => this.tools!.endsCall(c.name));
    const runs = calls.map(async ([callId, c]) => {
      const args = parseArguments(c.arguments);
      if (ending && callId === ending[0]) {
        this.toolOutput(callId, { pending: 'runs once your last words have played' });
        return undefined;
      }
      if (this.tools!.endsCall(c.name)) {
        this.toolOutput(callId, { error: 'not run: another call-ending tool was called' });
        return undefined;
      }
      const token = { cancelled: false };
      this.running.set(callId, token);
      const at = Date.now();
      const run = await this.tools!.run(c.name, callId, args);
      this.running.delete(callId);
      if (token.cancelled || this.state !== 'live') {
        // The caller spoke while it ran: the late result is dropped (the call keeps what happened).
        this.transcript.tool(c.name, args, { dropped: 'the caller interrupted', result: run.result }, at);
        this.toolOutput(callId, { error: 'cancelled: the caller interrupted' });
        return undefined;
      }
      this.transcript.tool(c.name, args, run.result, at);
      this.toolOutput(callId, run.result);
      return run;
    });
    const done = (await Promise.all(runs)).filter((x) => x !== undefined);
    if (this.state !== 'live') return;
    if (ending) {
      const [callId, c] = ending;
      this.pendingEnd = { kind: c.name === 'transfer_call' ? 'transfer' : 'hangup', tool: { callId, name: c.name, args: parseArguments(c.arguments) } };
      this.endDeadline = setTimeout(() => void this.executeEnd(), END_DEADLINE_MS);
      // The agent says its goodbye (or that it transfers) if it has not yet; the end waits for those words to play.
      if (!r.hadAudio || done.length) this.respond();
      return;
    }
    if (done.length) this.respond();
  }

  private toolOutput(callId: string, result: unknown): void {
    this.model.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output: typeof result === 'string' ? result : JSON.stringify(result ?? null) } });
  }

  // ---- turn-taking, silence, duration ----

  /** Asks the model to speak now (with one-off instructions). */
  private respond(instructions?: string): void {
    this.awaitingResponse = true;
    this.model.send({ type: 'response.create', ...(instructions ? { response: { instructions } } : {}) });
  }

  /** A system note in the model's conversation. */
  private note(text: string): void {
    this.model.send({ type: 'conversation.item.create', item: { type: 'message', role: 'system', content: [{ type: 'input_text', text }] } });
  }

  /** Nothing is being said, generated or run: end now if an end waits, else the silence timer starts. */
  private maybeIdle(): void {
    if (this.state !== 'live') return;
    if (this.playout.playing || this.currentResponse || this.awaitingResponse || this.running.size) return;
    if (this.pendingEnd) return void this.executeEnd();
    this.startSilence();
  }

  private startSilence(): void {
    this.clearSilence();
    const trigger = this.agent.reminder_trigger_ms;
    if (!(trigger > 0) || this.userSpeaking) return;
    this.silenceTimer = setTimeout(() => this.onSilence(), trigger);
  }

  private clearSilence(): void {
    clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
  }

  private onSilence(): void {
    if (this.state !== 'live' || this.userSpeaking) return;
    if (this.reminders < (this.agent.reminder_max_count ?? 0)) {
      this.reminders++;
      this.respond('The caller has been silent for a while. Briefly and politely check whether they are still there, in the language of the conversation.');
    } else if (this.agent.end_call_after_silence) {
      this.pendingEnd = { kind: 'hangup', firm: true };
      void this.executeEnd();
    }
  }

  private onMaxDuration(): void {
    if (this.state !== 'live') return;
    this.clearSilence();
    const cut = this.playout.interrupt();
    if (cut) {
      this.input.carrier.clear();
      this.model.send({ type: 'conversation.item.truncate', event_id: this.benignId(), item_id: cut.itemId, content_index: 0, audio_end_ms: cut.audioEndMs });
    }
    if (this.currentResponse) {
      const r = this.responses.get(this.currentResponse);
      if (r) r.interrupted = true;
      this.model.send({ type: 'response.cancel', event_id: this.benignId() });
      this.currentResponse = null;
    }
    this.pendingEnd = { kind: 'hangup', firm: true };
    this.endDeadline = setTimeout(() => void this.executeEnd(), END_DEADLINE_MS);
    this.respond('The call has reached its time limit. Say a short, polite goodbye in one sentence, in the language of the conversation.');
  }

  private benignId(): string {
    return `${BENIGN_EVENT_PREFIX}${++this.eventSeq}`;
  }

  // ---- ends ----

  /** Ends the call as `pendingEnd` says: the conversation is written first, then the carrier is told. */
  private async executeEnd(): Promise<void> {
    const end = this.pendingEnd;
    if (!end || this.state === 'ending' || this.state === 'closed') return;
    this.state = 'ending';
    this.clearTimers();
    if (end.tool) {
      const at = Date.now();
      const run = await this.tools!.run(end.tool.name, end.tool.callId, end.tool.args);
      this.transcript.tool(end.tool.name, end.tool.args, run.result, at);
      if (run.effect?.transferTo) Object.assign(end, { kind: 'transfer', to: run.effect.transferTo, reason: 'transferred' });
      else if (!run.effect?.end) {
        // The built-in refused (no transfer number): the call goes on and the model hears why.
        this.pendingEnd = null;
        this.state = 'live';
        this.note(`${end.tool.name} did not run: ${JSON.stringify(run.result)}. Tell the caller and go on.`);
        this.respond();
        return;
      }
    }
    this.endReason = end.reason;
    await this.record();
    if (end.kind === 'transfer' && end.to) {
      const ok = await this.updateCall({ twiml: transferTwiml(end.to, this.input.context.call.ring_duration_ms) });
      if (!ok) {
        this.errorMessage = `The transfer to ${end.to} failed at the carrier`;
        await this.record();
        await this.hangUp();
      }
    } else {
      await this.hangUp();
    }
  }

  /** The model failed: the carrier apologizes and hangs up (the model cannot speak any more); the call keeps why. */
  private async fail(reason: string): Promise<void> {
    if (this.state === 'ending' || this.state === 'closed') return;
    logger.warn('A call is ended by the runtime', { call_id: this.callId, reason });
    this.state = 'ending';
    this.clearTimers();
    this.model.close();
    this.endReason = 'failed';
    this.errorMessage = reason.startsWith('the voice runtime') ? `The call was cut: ${reason}` : `The speech model failed during the call: ${reason}`;
    await this.record();
    if (!(await this.updateCall({ twiml: APOLOGY_TWIML }))) this.input.carrier.close(1011, 'model failure');
  }

  private async hangUp(): Promise<void> {
    if (!(await this.updateCall({ hangUp: true }))) {
      // No carrier API (or it failed): closing the stream ends <Connect>, and with no more instructions the call hangs up.
    }
    this.model.close();
    this.input.carrier.close(1000, 'call ended');
  }

  /** Changes the live call at the carrier; false when that is not possible. */
  private async updateCall(change: LiveCallChange): Promise<boolean> {
    const carrier = telephony();
    const sid = this.input.context.call.provider_call_id ?? this.input.providerCallId;
    if (!carrier.updateCall || !sid) return false;
    try {
      await carrier.updateCall(sid, change);
      return true;
    } catch (err) {
      logger.error('The carrier did not update the live call', { call_id: this.callId, error: err as Error });
      return false;
    }
  }

  /** The stream is over: stop everything and write the call. */
  private async finish(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.clearTimers();
    this.model.close();
    for (const token of this.running.values()) token.cancelled = true;
    await this.record();
    this.resolveDone();
  }

  /** Writes the conversation to the call (only when it changed since the last write). */
  private async record(): Promise<void> {
    const version = this.transcript.version + (this.endReason ? 1000 : 0) + (this.errorMessage ? 2000 : 0);
    if (version === this.recordedVersion) return;
    this.recordedVersion = version;
    try {
      await recordConversation(this.orgId, this.callId, {
        transcript: this.transcript.transcript(),
        toolCalls: this.transcript.toolCalls(),
        endReason: this.endReason,
        errorMessage: this.errorMessage,
      });
    } catch (err) {
      this.recordedVersion = -1;
      logger.error('The conversation could not be written to the call', { call_id: this.callId, error: err as Error });
    }
  }

  private clearTimers(): void {
    this.clearSilence();
    clearTimeout(this.durationTimer);
    clearTimeout(this.endDeadline);
  }
}

import { logger } from '../shared/logger';
import type { CallContext } from './call-context';
import { AmbientPacer, ambientMixerFor } from './ambient';
import { CallRecord } from './call-record';
import { CallEnding, carryOutEnd, END_DEADLINE_MS, SilenceWatch } from './call-ending';
import { CarrierCall } from './carrier';
import { MAX_BUFFERED_FRAMES, type VoiceSettings } from './config';
import { AUDIO_BYTES_PER_MS, type AudioFormat, type MediaTransport, type SessionObserver } from './media-transport';
import { RealtimeClient, sessionUpdate, type ServerEvent } from './realtime-client';
import { FunctionCalls, ToolCalls } from './tool-calls';
import { resumedStartMs } from './resume';
import { TranscriptRecorder } from './transcript';
import { movedByPlatform, Transfers } from './transfers';
import { BENIGN_EVENT_PREFIX, TurnTaking } from './turn-taking';
import type { TwilioFrame } from './twilio-transport';
import { recordRealtimeResponse } from '../shared/telemetry/genai';
import { inStoredTrace } from '../shared/telemetry/tracing';

export { APOLOGY_TWIML, transferTwiml } from './carrier';

/**
 * One call: the carrier's stream and the model's session, the agent's rules in between (a
 * LiveKit/Pipecat-style session object); audio passes through untouched both ways. The session
 * only routes events between its parts, each read and tested alone:
 *
 * - turn-taking.ts: responses, the agent's audio and its marks, the caller cutting in (`clear`,
 *   `conversation.item.truncate`, the transcript cut to the words heard);
 * - tool-calls.ts: the model's function calls, checked and run; a response is done → its calls
 *   run, their outputs go back, and the model is asked to respond, so it never falls silent;
 * - call-ending.ts: `end_call`/`transfer_call` once the words before them have played (called
 *   off by the caller speaking), silence (reminders, `end_call_after_silence`), the maximum
 *   duration, voicemail;
 * - carrier.ts: the carrier's REST calls (hang up, transfer, the apology when the model fails);
 * - transfers.ts: transfers and hand-offs: `handoff_to_agent` (the session switched to another
 *   agent, handoff.ts), a warm transfer's platform side, a stream back from a warm transfer the
 *   person did not take (resume.ts);
 * - call-record.ts: the call's writes (the conversation, the end's reason, the stream's end).
 */

/** Model errors that concern one request and leave the session usable. */
const BENIGN_ERRORS = new Set(['response_cancel_not_active', 'conversation_already_has_active_response']);

export interface SessionInput {
  /** The line: Twilio's media stream (twilio-transport.ts) or a browser (browser-transport.ts). */
  carrier: MediaTransport;
  /** The line's audio (default `mulaw`, the carrier's); the model's session is opened in it. */
  audioFormat?: AudioFormat;
  /** Told who speaks and the words as they come (a browser shows them); the failure's message before the line closes. */
  observer?: SessionObserver & { failed?(message: string): void };
  context: CallContext;
  settings: VoiceSettings;
  /** Twilio's AnsweredBy (`human`, `machine_end_beep`, …), when detection ran. */
  answeredBy?: string;
  /** The carrier's call id (Twilio CallSid). */
  providerCallId?: string;
  /** When the stream started (ms): transcript times count from it. */
  startMs: number;
  /** The stream parameter `resume` (a warm transfer's index): back from a transfer, the call's conversation goes on (resume.ts). */
  resume?: string;
  /** The call's W3C trace context (the stream token's `traceparent` claim, when tracing is on): model responses and tool calls join the call's trace. */
  traceparent?: string;
}

export class CallSession {
  readonly callId: string;
  readonly orgId: string;
  /** A phone call through the Realtime model, or a browser's web call (the metrics' Channel). */
  readonly channel: 'realtime' | 'web';
  /** Resolves when the session is over and the call written. */
  readonly done: Promise<void>;
  private resolveDone!: () => void;

  private readonly model = new RealtimeClient();
  private readonly transcript: TranscriptRecorder;
  private readonly turns: TurnTaking;
  private readonly calls = new FunctionCalls();
  private toolCalls: ToolCalls | undefined;
  private readonly transfers: Transfers;
  private readonly ending: CallEnding;
  private readonly silence: SilenceWatch;
  private readonly carrierCall: CarrierCall;
  private state: 'connecting' | 'live' | 'ending' | 'closed' = 'connecting';
  private buffered: string[] = [];
  private readonly writer: CallRecord;
  private voicemail = false;
  /** The agent's ambient sound, mixed under its audio and filling the silences (null for none). */
  private readonly ambient: AmbientPacer | null;
  /** When the call's transcript clock starts (ms): the stream's start, or earlier for a resumed stream (resume.ts). */
  private readonly startMs: number;
  /** The call's maximum duration, as the call or its first agent set it when it was answered (a hand-off keeps it). */
  private maxDurationMs = 0;
  /** The model has produced audio in this session: the Realtime API no longer lets its voice change (a hand-off keeps it). */
  private modelSpoke = false;

  constructor(private readonly input: SessionInput) {
    const { context, settings } = input;
    this.callId = context.call.id;
    this.orgId = context.call.organization_id;
    this.channel = context.call.channel === 'web' ? 'web' : 'realtime';
    const earlier = input.resume === undefined ? undefined : { transcript: context.call.transcript ?? [], toolCalls: context.call.tool_calls ?? [] };
    this.startMs = earlier ? resumedStartMs(context.call, earlier.transcript, input.startMs) : input.startMs;
    this.transcript = new TranscriptRecorder(this.startMs, earlier);
    this.done = new Promise((resolve) => (this.resolveDone = resolve));
    this.carrierCall = new CarrierCall(this.callId, context.call.provider_call_id ?? input.providerCallId);
    const format = input.audioFormat ?? 'mulaw';
    // The beds are μ-law (ambient-sounds.ts): a PCM16 line (a browser) has no ambient sound.
    const mixer = format === 'mulaw' ? ambientMixerFor(context.agent) : null;
    this.ambient = mixer && new AmbientPacer({ mixer, send: (payload) => input.carrier.sendMedia(payload) });
    // The agent's audio goes out through the ambient pacer when there is one: mixed over the bed, and the bed paused while it plays.
    const carrier = this.ambient
      ? {
          sendMedia: (payload: string) => input.carrier.sendMedia(this.ambient!.agent(payload)),
          sendMark: (name: string) => input.carrier.sendMark(name),
          clear: () => {
            input.carrier.clear();
            this.ambient!.cleared();
          },
        }
      : input.carrier;
    this.turns = new TurnTaking({
      send: (e) => this.model.send(e),
      carrier,
      transcript: this.transcript,
      live: () => this.state === 'live',
      bytesPerMs: AUDIO_BYTES_PER_MS[format],
      channel: this.channel,
      agentSpeaking: (active) => input.observer?.speaking('agent', active),
    });
    this.transfers = new Transfers({
      context,
      settings,
      transcript: this.transcript,
      send: (e) => this.model.send(e),
      modelSpoke: () => this.modelSpoke,
      closeModel: () => this.model.close(),
    });
    this.writer = new CallRecord(this.orgId, this.callId, this.transcript, () => this.transfers.recorded);
    this.ending = new CallEnding(() => void this.executeEnd());
    this.silence = new SilenceWatch(
      {
        triggerMs: context.agent.reminder_trigger_ms ?? 0,
        maxReminders: context.agent.reminder_max_count ?? 0,
        endAfterSilence: !!context.agent.end_call_after_silence,
        endSilenceMs: settings.silenceEndMs,
      },
      {
        remind: () => {
          if (this.state !== 'live' || this.turns.userSpeaking) return;
          this.turns.respond('The caller has been silent for a while. Briefly and politely check whether they are still there, in the language of the conversation.');
        },
        end: () => {
          if (this.state !== 'live' || this.turns.userSpeaking) return;
          this.ending.request({ kind: 'hangup', firm: true });
          void this.executeEnd();
        },
      },
    );
  }

  private get agent() {
    return this.input.context.agent;
  }

  /** The caller was moved to a warm transfer's conference: this stream is over for the runtime (a resumed stream may open for the call). */
  get handedOver(): boolean {
    return this.transfers.movedToConference;
  }

  /** The stream stopped (or its socket closed): a new stream of the call may take its place. */
  get streamOver(): boolean {
    return this.state === 'closed';
  }

  /** Opens the model's session and starts the call's course (begin message, voicemail or listening). */
  async start(): Promise<void> {
    const { context, settings } = this.input;
    const call = context.call;
    this.voicemail = !!this.input.answeredBy?.startsWith('machine') && !!(call.voicemail_detection || this.agent.enable_voicemail_detection);
    if (this.voicemail && !context.voicemailMessage) {
      // A machine answered and there is nothing to leave: hang up at once.
      this.ending.request({ kind: 'hangup', reason: 'voicemail', firm: true });
      return this.executeEnd();
    }
    try {
      await this.transfers.openTools();
      const transfers = this.transfers;
      this.toolCalls = new ToolCalls({
        // Read at each run: a hand-off replaces the call's tools.
        get tools() {
          return transfers.tools!;
        },
        transcript: this.transcript,
        output: (id, r) => this.toolOutput(id, r),
        live: () => this.state === 'live',
      });
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
    this.ambient?.start();
    this.model.send(
      sessionUpdate(settings.realtimeProtocol, {
        instructions: context.instructions,
        voice: this.agent.voice_id || undefined,
        temperature: this.agent.temperature,
        tools: this.voicemail ? [] : this.transfers.tools!.definitions,
        transcriptionModel: settings.transcriptionModel,
        vad: !this.voicemail,
        audioFormat: this.input.audioFormat ?? 'mulaw',
      }),
    );
    if (this.voicemail) {
      this.ending.request({ kind: 'hangup', reason: 'voicemail', firm: true });
      this.turns.respond(`You reached a voicemail. Say exactly the following, word for word, and nothing else: ${context.voicemailMessage}`);
      return;
    }
    // Back from a transfer: the new session learns the conversation so far before anything the caller says now.
    for (const item of this.transfers.resumedHistory(this.input.resume)) this.model.send(item);
    for (const frame of this.buffered) this.model.appendAudio(frame);
    this.buffered = [];
    this.maxDurationMs = call.max_call_duration_ms ?? this.agent.max_call_duration_ms;
    this.ending.limit(this.maxDurationMs, this.startMs, () => this.onMaxDuration());
    if (this.input.resume !== undefined) {
      this.turns.respond(this.transfers.resumedGreeting(this.input.resume));
    } else if (this.agent.start_speaker !== 'user') {
      this.turns.respond(context.beginMessage ? `Greet the caller by saying exactly the following, word for word, and nothing else: ${context.beginMessage}` : undefined);
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
        if (this.turns.markEchoed(frame.mark.name)) this.maybeIdle();
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
        this.turns.userTurnEnded();
        this.turns.userSpeaking = false;
        this.input.observer?.speaking('user', false);
        return;
      case 'conversation.item.input_audio_transcription.delta':
        return this.liveWords('user', e, false);
      case 'conversation.item.input_audio_transcription.completed':
        this.liveWords('user', e, true);
        return this.turns.userTranscript(e);
      case 'response.output_audio_transcript.delta':
        return this.liveWords('agent', e, false);
      case 'response.created':
        this.turns.responseCreated(e);
        this.silence.stop();
        return;
      case 'response.output_audio.delta':
        this.modelSpoke = true;
        return this.turns.audio(e);
      case 'response.output_audio_transcript.done':
        this.liveWords('agent', e, true);
        return this.turns.agentTranscript(e);
      case 'response.output_item.added':
      case 'response.output_item.done':
        return this.calls.item(this.turns.responseOf(e), e.item);
      case 'response.function_call_arguments.done':
        return this.calls.argumentsDone(this.turns.responseOf(e), e);
      case 'response.done':
        return void this.onResponseDone(e);
      case 'error':
        return this.onModelError(e);
      default:
        return;
    }
  }

  /** The words so far of one turn, for an observer (a browser's live transcript); the call's transcript is kept apart (transcript.ts). */
  private readonly words = new Map<string, string>();

  private liveWords(role: 'agent' | 'user', e: ServerEvent, final: boolean): void {
    const observer = this.input.observer;
    if (!observer) return;
    const id = String(e.item_id ?? '');
    const text = final ? String(e.transcript ?? '') : (this.words.get(id) ?? '') + String(e.delta ?? '');
    if (final) this.words.delete(id);
    else this.words.set(id, text);
    observer.transcript(role, id, text, final);
  }

  private onSpeechStarted(e: ServerEvent): void {
    this.input.observer?.speaking('user', true);
    this.silence.callerSpoke();
    if (!this.turns.speechStarted(e, !this.voicemail)) return;
    this.toolCalls?.cancelAll();
    if (this.ending.callOff()) this.turns.note('The caller spoke before the call could end or be transferred, so it goes on. Listen and answer them.');
  }

  private async onResponseDone(e: ServerEvent): Promise<void> {
    const response = e.response ?? {};
    const { id, state } = this.turns.responseDone(response.id);
    recordRealtimeResponse(this.input.traceparent, { model: this.agent.s2s_model || this.input.settings.defaultModel, startMs: state.createdMs, status: response.status ?? 'completed', usage: response.usage });
    const calls = this.calls.responseDone(id, response.output);
    const completed = (response.status ?? 'completed') === 'completed';
    if (calls.length && completed && this.toolCalls) {
      if (state.interrupted) this.toolCalls.refuse(calls);
      else if (this.state === 'live') {
        const toolsStartedMs = Date.now();
        const toolCalls = this.toolCalls;
        const { answered, end, knowledgeBaseMs } = await inStoredTrace('realtime tool calls', this.input.traceparent, { attributes: { 'gen_ai.conversation.id': this.callId, 'tool_calls.count': calls.length } }, () => toolCalls.run(calls));
        this.turns.toolsRan(Date.now() - toolsStartedMs, knowledgeBaseMs);
        if (this.state !== 'live') return;
        if (end) {
          this.ending.request({ kind: end.name === 'transfer_call' ? 'transfer' : 'hangup', tool: end }, END_DEADLINE_MS);
          // The agent says its goodbye (or that it transfers) if it has not yet; the end waits for those words to play.
          if (!state.hadAudio || answered) this.turns.respond();
        } else if (answered) {
          this.turns.respond();
        }
      }
    }
    this.maybeIdle();
  }

  private onModelError(e: ServerEvent): void {
    const error = e.error ?? {};
    if (BENIGN_ERRORS.has(error.code) || String(error.event_id ?? '').startsWith(BENIGN_EVENT_PREFIX)) {
      logger.info('The model refused a request; the call goes on', { call_id: this.callId, code: error.code, message: error.message });
      this.turns.refused(error.code);
      return;
    }
    void this.fail(`the model reported an error: ${error.message ?? error.code ?? 'unknown'}`);
  }

  private toolOutput(callId: string, result: unknown): void {
    this.model.send({ type: 'conversation.item.create', item: { type: 'function_call_output', call_id: callId, output: typeof result === 'string' ? result : JSON.stringify(result ?? null) } });
  }

  // ---- idle, the maximum duration ----

  /** Nothing is being said, generated or run: end now if an end waits, else the silence timer starts. */
  private maybeIdle(): void {
    if (this.state !== 'live') return;
    if (!this.turns.idle || this.toolCalls?.busy) return;
    if (this.ending.pending) return void this.executeEnd();
    if (!this.turns.userSpeaking) this.silence.start();
  }

  private onMaxDuration(): void {
    if (this.state !== 'live') return;
    this.silence.stop();
    this.turns.cutPlayout();
    this.turns.cancelCurrent();
    this.ending.request({ kind: 'hangup', firm: true }, END_DEADLINE_MS);
    this.turns.respond('The call has reached its time limit. Say a short, polite goodbye in one sentence, in the language of the conversation.');
  }

  // ---- ends ----

  /** Ends the call as the pending end says (call-ending.ts). */
  private async executeEnd(): Promise<void> {
    if (this.state === 'ending' || this.state === 'closed') return;
    const end = this.ending.take();
    if (!end) return;
    this.state = 'ending';
    this.clearTimers();
    const refused = await carryOutEnd(end, {
      tools: this.transfers.tools,
      transcript: this.transcript,
      carrier: this.carrierCall,
      ringMs: this.input.context.call.ring_duration_ms,
      record: this.writer.record,
      close: () => {
        this.model.close();
        this.input.carrier.close(1000, 'call ended');
      },
      startWarm: this.transfers.startWarm,
      abandonWarm: this.transfers.abandonWarm,
      handedOver: this.transfers.handedOver,
    });
    if (refused && this.state === 'ending') {
      // The built-in refused (no transfer number, a warm transfer that could not start): the call goes on and the model hears why.
      this.state = 'live';
      this.ambient?.start();
      this.ending.limit(this.maxDurationMs, this.startMs, () => this.onMaxDuration());
      this.turns.note(refused.refused);
      this.turns.respond();
    }
  }

  /** The model failed: the carrier apologizes and hangs up (the model cannot speak any more); the call keeps why. */
  private async fail(reason: string): Promise<void> {
    if (this.state === 'ending' || this.state === 'closed') return;
    logger.warn('A call is ended by the runtime', { call_id: this.callId, reason });
    this.state = 'ending';
    this.clearTimers();
    this.model.close();
    const error = reason.startsWith('the voice runtime') ? `The call was cut: ${reason}` : `The speech model failed during the call: ${reason}`;
    this.input.observer?.failed?.(error);
    await this.writer.record({ reason: 'failed', error });
    if (!(await this.carrierCall.apologize())) this.input.carrier.close(1011, 'model failure');
  }

  /** The stream is over (`stop`, or the socket closed): stop everything and write the call with the stream's end. */
  private async finish(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.clearTimers();
    this.model.close();
    this.toolCalls?.cancelAll();
    // Handed over to a warm transfer: the stream's stop does not end the call, and the platform has written to it since (the briefing).
    if (this.handedOver) return this.resolveDone();
    const moved = await movedByPlatform(this.input.context, this.carrierCall, this.transfers.startedWarm);
    await this.writer.record(moved ? {} : { streamEnded: true });
    this.resolveDone();
  }

  private clearTimers(): void {
    this.ambient?.stop();
    this.silence.stop();
    this.ending.clear();
  }
}

import { base64Bytes, MULAW_BYTES_PER_MS, Playout } from './playout';
import type { ServerEvent } from './realtime-client';
import type { TranscriptRecorder } from './transcript';
import { ReplyTimer, type ReplyLatency } from '../shared/domain/conversations/latency';
import { recordReply } from '../shared/telemetry/metrics';

/**
 * Who speaks when: the model's responses, the agent's audio to the carrier (a mark after each
 * chunk, playout.ts), and the caller cutting in. When the caller starts speaking while agent audio
 * is unplayed, the carrier is told to `clear`, the model's item is truncated at what was heard,
 * the transcript keeps only the words heard (marked `interrupted`), and the generation is marked
 * interrupted: its late audio is dropped and its tool calls are not run.
 */

/** Client events whose failure is not the session's (a truncate past the audio, a late cancel). */
export const BENIGN_EVENT_PREFIX = 'benign_';

export interface ResponseState {
  interrupted: boolean;
  hadAudio: boolean;
  /** When `response.created` came (this process's clock). */
  createdMs?: number;
}

export interface TurnTakingDeps {
  /** A client event to the model. */
  send(event: Record<string, unknown>): void;
  carrier: { sendMedia(payload: string): void; sendMark(name: string): void; clear(): void };
  transcript: TranscriptRecorder;
  /** Agent audio may be played now (the session is live). */
  live(): boolean;
  /** Bytes of audio per millisecond (the call's format: μ-law 8, the default; PCM16 at 24 kHz 48). */
  bytesPerMs?: number;
  /** The agent started or stopped being heard (its first audio sent; all of it played, or cut). */
  agentSpeaking?(active: boolean): void;
  /** The call's channel, as its replies are counted (the Replies metric; default `realtime`: a phone call). */
  channel?: 'realtime' | 'web';
}

export class TurnTaking {
  private readonly playout: Playout;
  private readonly bytesPerMs: number;
  private readonly responses = new Map<string, ResponseState>();
  private current: string | null = null;
  /** A `response.create` sent whose `response.created` has not come yet. */
  private awaiting = false;
  private readonly itemStartMs = new Map<string, number>();
  private readonly itemResponse = new Map<string, string>();
  /** Milliseconds of each item's audio the model sent (played, or dropped after a cut). */
  private readonly itemAudioMs = new Map<string, number>();
  private readonly speechStartMs = new Map<string, number>();
  /**
   * Times the replies to the caller's last turn (docs/api.md, "Latency of every reply"): started at
   * the model's end-of-speech event; each audio item's figures taken when its first audio goes to
   * the carrier (or the browser). Undefined before the caller first spoke (a greeting is no reply).
   */
  private timer: ReplyTimer | undefined;
  private readonly itemLatency = new Map<string, ReplyLatency>();
  private seq = 0;
  /** The caller is speaking (server VAD). */
  userSpeaking = false;

  constructor(private readonly deps: TurnTakingDeps) {
    this.bytesPerMs = deps.bytesPerMs ?? MULAW_BYTES_PER_MS;
    this.playout = new Playout(this.bytesPerMs);
  }

  /** Nothing is being said or generated (the carrier has played all the agent's audio). */
  get idle(): boolean {
    return !this.playout.playing && !this.current && !this.awaiting;
  }

  /** Asks the model to speak now (with one-off instructions). */
  respond(instructions?: string): void {
    this.awaiting = true;
    this.deps.send({ type: 'response.create', ...(instructions ? { response: { instructions } } : {}) });
  }

  /** A system note in the model's conversation. */
  note(text: string): void {
    this.deps.send({ type: 'conversation.item.create', item: { type: 'message', role: 'system', content: [{ type: 'input_text', text }] } });
  }

  /** An event id whose refusal by the model is harmless. */
  benignId(): string {
    return `${BENIGN_EVENT_PREFIX}${++this.seq}`;
  }

  /** The model refused a `response.create` because one is active: none is awaited any more. */
  refused(code: string): void {
    if (this.awaiting && code === 'conversation_already_has_active_response') this.awaiting = false;
  }

  responseCreated(e: ServerEvent): void {
    const id = e.response?.id ?? `r${++this.seq}`;
    this.awaiting = false;
    this.current = id;
    this.responses.set(id, { interrupted: false, hadAudio: false, createdMs: Date.now() });
  }

  /** The caller's turn ended (the model's `input_audio_buffer.speech_stopped`): the next replies are timed from now. */
  userTurnEnded(atMs = Date.now()): void {
    this.timer = new ReplyTimer(atMs);
  }

  /** Time the tools of a response took before the next reply (they run at once: their wall time), the knowledge base's search in it counted as `knowledge_base`. */
  toolsRan(ms: number, knowledgeBaseMs = 0): void {
    const kb = Math.min(ms, Math.max(0, knowledgeBaseMs));
    this.timer?.addKnowledgeBase(kb);
    this.timer?.addTools(ms - kb);
  }

  /** The response is over: its state (kept while its audio may still be playing, so a later cut marks it). */
  responseDone(id: string | undefined): { id: string; state: ResponseState } {
    const key = id ?? this.current ?? '';
    if (this.current === key) this.current = null;
    const state = this.responses.get(key) ?? { interrupted: false, hadAudio: false };
    // A response that only called tools: the model's whole time went before the reply that follows.
    if (!state.hadAudio && state.createdMs !== undefined) this.timer?.addModel(Date.now() - state.createdMs);
    return { id: key, state };
  }

  /** The response an event belongs to. */
  responseOf(e: ServerEvent): string {
    return e.response_id ?? this.current ?? '';
  }

  audio(e: ServerEvent): void {
    if (typeof e.delta !== 'string') return;
    const responseId = this.responseOf(e);
    const itemId = String(e.item_id ?? responseId);
    const bytes = base64Bytes(e.delta);
    this.itemAudioMs.set(itemId, (this.itemAudioMs.get(itemId) ?? 0) + bytes / this.bytesPerMs);
    const r = this.responses.get(responseId);
    // Audio of an interrupted generation still in flight from the model is never played.
    if (r?.interrupted || !this.deps.live()) return;
    if (!this.itemStartMs.has(itemId)) {
      const now = Date.now();
      this.itemStartMs.set(itemId, now);
      // The response's first audio: the model's time from its creation; each item's figures as its first audio goes out.
      if (r && !r.hadAudio && r.createdMs !== undefined) this.timer?.addModel(now - r.createdMs);
      if (this.timer) {
        const figures = this.timer.figures(now);
        this.itemLatency.set(itemId, figures);
        recordReply(this.deps.channel ?? 'realtime', figures.e2e);
      }
    }
    if (r) r.hadAudio = true;
    this.itemResponse.set(itemId, responseId);
    if (!this.playout.playing) this.deps.agentSpeaking?.(true);
    this.deps.carrier.sendMedia(e.delta);
    this.deps.carrier.sendMark(this.playout.sent(itemId, bytes));
  }

  /** The agent's words for an item: only words the caller could hear some of are the agent's (a generation cut before any audio said nothing). */
  agentTranscript(e: ServerEvent): void {
    if (this.itemStartMs.has(e.item_id)) this.deps.transcript.agentSaid(e.item_id, String(e.transcript ?? ''), this.itemStartMs.get(e.item_id), this.itemLatency.get(e.item_id));
  }

  userTranscript(e: ServerEvent): void {
    this.deps.transcript.say('user', String(e.transcript ?? ''), this.speechStartMs.get(e.item_id));
  }

  /** A mark came back; true when the agent's audio has all played. */
  markEchoed(name: string): boolean {
    const done = this.playout.echoed(name);
    if (done) this.deps.agentSpeaking?.(false);
    return done;
  }

  /**
   * The caller started speaking. Returns true when that cut the agent off (audio unplayed or a
   * generation under way), which the session treats as an interruption. `cutIn` false (leaving a
   * voicemail): nothing is cut.
   */
  speechStarted(e: ServerEvent, cutIn = true): boolean {
    this.userSpeaking = true;
    this.speechStartMs.set(e.item_id, Date.now());
    if (!cutIn) return false;
    const cut = this.cutPlayout();
    // The generation under way is cut too (the server cancels it: interrupt_response).
    const current = this.current ? this.responses.get(this.current) : undefined;
    if (current) current.interrupted = true;
    return cut || !!this.current;
  }

  /**
   * Stops the agent's audio where the caller is: `clear` at the carrier, the model's item truncated
   * at what was played, its transcript cut to the words heard (played ms / the item's audio ms).
   */
  cutPlayout(): boolean {
    const cut = this.playout.interrupt();
    if (!cut) return false;
    this.deps.carrier.clear();
    this.deps.agentSpeaking?.(false);
    this.deps.send({ type: 'conversation.item.truncate', event_id: this.benignId(), item_id: cut.itemId, content_index: 0, audio_end_ms: cut.audioEndMs });
    const total = Math.max(this.itemAudioMs.get(cut.itemId) ?? 0, cut.audioEndMs);
    this.deps.transcript.interrupted(cut.itemId, total > 0 ? cut.audioEndMs / total : 0);
    const owner = this.itemResponse.get(cut.itemId);
    const ownerState = owner ? this.responses.get(owner) : undefined;
    if (ownerState) ownerState.interrupted = true;
    return true;
  }

  /** Cancels the generation under way (the maximum duration): its audio is dropped. */
  cancelCurrent(): void {
    if (!this.current) return;
    const r = this.responses.get(this.current);
    if (r) r.interrupted = true;
    this.deps.send({ type: 'response.cancel', event_id: this.benignId() });
    this.current = null;
  }
}

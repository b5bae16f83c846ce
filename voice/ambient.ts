import { AMBIENT_SOUNDS, ambientBed, isAmbientSound, preloadAmbientBeds, type AmbientSound } from './ambient-sounds';
import { MULAW_DECODE, MULAW_MAGNITUDE } from './mulaw';
import { MULAW_BYTES_PER_MS } from './playout';

/**
 * Ambient sound on a call (the agent's `ambient_sound` at `ambient_sound_volume`): a looped bed
 * (ambient-sounds.ts) mixed under the agent's audio, and sent alone while the agent is silent, so
 * the caller hears it for the whole call.
 *
 * The carrier's audio is μ-law, so mixing is decode → add the bed's sample × volume → clip →
 * encode, all by table (mulaw.ts), with no allocation per sample. One position in the loop serves
 * both the mixed agent audio and the bed frames, in the order they are sent to the carrier (the
 * order the caller hears them), so the bed plays on without a jump.
 */

export { AMBIENT_SOUNDS, isAmbientSound, preloadAmbientBeds, type AmbientSound };

/** Twilio's frame: 20 ms of μ-law at 8 kHz. */
export const FRAME_MS = 20;
export const FRAME_BYTES = FRAME_MS * MULAW_BYTES_PER_MS;

export class AmbientMixer {
  private readonly samples: Int16Array;
  /** The volume as a Q12 gain (4096 = 1). */
  private readonly gain: number;
  private position = 0;

  /** `volume` 0–1 (clamped): the bed's loudness (at 1, about −26 dBFS RMS). */
  constructor(
    readonly sound: AmbientSound,
    readonly volume: number,
  ) {
    if (!isAmbientSound(sound)) throw new RangeError(`Unknown ambient sound "${String(sound)}" (one of ${AMBIENT_SOUNDS.join(', ')})`);
    this.samples = ambientBed(sound);
    this.gain = Math.round(Math.min(1, Math.max(0, Number.isFinite(volume) ? volume : 0)) * 4096);
  }

  /** The agent's μ-law audio with the bed under it: a new buffer of the same length; the loop moves on by its length. */
  mix(mulaw: Uint8Array): Buffer {
    const out = Buffer.allocUnsafe(mulaw.length);
    if (this.gain === 0) {
      out.set(mulaw);
      return out;
    }
    // Locals, not the imported bindings: a bundle's CommonJS exports are getters, one call per read.
    const decode = MULAW_DECODE;
    const encode = MULAW_MAGNITUDE;
    const bed = this.samples;
    const gain = this.gain;
    let p = this.position;
    for (let i = 0; i < mulaw.length; i++) {
      let s = decode[mulaw[i]!]! + ((bed[p]! * gain) >> 12);
      if (s > 32767) s = 32767;
      else if (s < -32768) s = -32768;
      out[i] = s < 0 ? encode[-s >> 2]! & 0x7f : encode[s >> 2]!;
      if (++p === bed.length) p = 0;
    }
    this.position = p;
    return out;
  }

  /** The bed alone, `bytes` long (μ-law), for while the agent is silent; the loop moves on by its length. */
  bed(bytes: number): Buffer {
    const out = Buffer.allocUnsafe(bytes);
    const encode = MULAW_MAGNITUDE;
    const bed = this.samples;
    const gain = this.gain;
    let p = this.position;
    for (let i = 0; i < bytes; i++) {
      const s = (bed[p]! * gain) >> 12;
      out[i] = s < 0 ? encode[-s >> 2]! & 0x7f : encode[s >> 2]!;
      if (++p === bed.length) p = 0;
    }
    this.position = p;
    return out;
  }

  /** `mix` for a base64 payload (a Realtime audio delta, a Twilio `media` payload). */
  mixPayload(b64: string): string {
    return this.mix(Buffer.from(b64, 'base64')).toString('base64');
  }

  /** `bed` as a base64 payload. */
  bedPayload(bytes: number = FRAME_BYTES): string {
    return this.bed(bytes).toString('base64');
  }
}

/** A mixer for an agent's settings, or null when there is nothing to hear (`""`, a volume of 0, or a name that is not a bed). */
export function ambientMixerFor(agent: { ambient_sound?: string | null; ambient_sound_volume?: number | null }): AmbientMixer | null {
  const sound = agent.ambient_sound ?? '';
  const volume = agent.ambient_sound_volume ?? 0;
  if (!isAmbientSound(sound) || !(volume > 0)) return null;
  return new AmbientMixer(sound, volume);
}

export interface AmbientPacerOptions {
  mixer: AmbientMixer;
  /** Sends one `media` payload (base64 μ-law) to the carrier. */
  send: (payload: string) => void;
  /** Milliseconds, monotonic; default `performance.now()`. */
  now?: () => number;
  /**
   * How far ahead of the carrier's playing the bed is kept queued (default 40 ms, two frames), so a
   * late timer never leaves a gap. Agent audio that starts during a silence waits at most this long.
   */
  leadMs?: number;
}

/**
 * Fills the silences. The carrier plays what it is sent in order, in real time, so the pacer keeps
 * one estimate: until when the carrier has audio queued. Every 20 ms it tops the queue up with bed
 * frames to `leadMs` ahead of now; agent audio (`agent` / `agentAudio`) pushes the end of the queue
 * out by its length, so no bed frame is sent while the agent's words are playing; a `clear` empties
 * the queue (`cleared`).
 */
export class AmbientPacer {
  private readonly now: () => number;
  private readonly leadMs: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  /** The carrier has audio queued until then (ms on `now`'s clock). */
  private queuedUntil = -Infinity;

  constructor(private readonly options: AmbientPacerOptions) {
    this.now = options.now ?? (() => performance.now());
    this.leadMs = options.leadMs ?? 2 * FRAME_MS;
  }

  get active(): boolean {
    return this.timer !== undefined;
  }

  /** Starts sending the bed (at once, then every 20 ms); the call's stream has started. */
  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), FRAME_MS);
    this.timer.unref?.();
    this.tick();
  }

  /** Stops for good (the call is ending); nothing more is sent. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Mixes the bed under one chunk of the agent's audio (base64 μ-law, any length) and counts it as queued: send what it returns. */
  agent(payload: string): string {
    const mixed = this.options.mixer.mix(Buffer.from(payload, 'base64'));
    this.agentAudio(mixed.length);
    return mixed.toString('base64');
  }

  /** `bytes` of agent audio were sent to the carrier: it is busy that much longer. */
  agentAudio(bytes: number): void {
    this.queuedUntil = Math.max(this.queuedUntil, this.now()) + bytes / MULAW_BYTES_PER_MS;
  }

  /** A `clear` was sent: the carrier dropped what it held, so the bed starts again at once. */
  cleared(): void {
    this.queuedUntil = -Infinity;
    if (this.timer) this.tick();
  }

  private tick(): void {
    const now = this.now();
    if (this.queuedUntil < now) this.queuedUntil = now; // the queue ran dry (or never filled): the gap is past
    while (this.queuedUntil < now + this.leadMs) {
      this.options.send(this.options.mixer.bedPayload(FRAME_BYTES));
      this.queuedUntil += FRAME_MS;
    }
  }
}

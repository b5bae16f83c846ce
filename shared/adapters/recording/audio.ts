import { WaveFile } from 'wavefile';
import { seededRandom } from '../seeded-random';

/**
 * Synthetic call recordings for the simulated carrier: a real WAV file (PCM 16-bit mono) that
 * any player opens, of exactly the call's length, holding speech-like sound rather than
 * silence, so a downloaded recording can be listened to and measured.
 *
 * The sound is a tiny formant synthesizer (the Klatt cascade idea): a glottal pulse train at a
 * speaker's pitch through three two-pole resonators tuned to a vowel's formants, shaped into
 * syllables, grouped into turns that alternate between two voices (the agent lower, the user
 * higher) with pauses between them. O(1) work per sample; the same seed gives the same bytes.
 * At the default 8 kHz a second costs 16 KB (plus a 44-byte header).
 */
export interface RecordingOptions {
  /** Samples per second; default 8000 (telephone quality). */
  sampleRate?: number;
  /** Varies the sound per call (the call id); default a fixed seed. */
  seed?: string;
}

/** The longest recording made (the agents' longest `max_call_duration_ms`, four hours). */
export const MAX_RECORDING_SECONDS = 4 * 3600;
const DEFAULT_SAMPLE_RATE = 8000;
/** Peak level of the normalized signal, as a fraction of full scale. */
const PEAK = 0.6;

/** (F1, F2, F3) in Hz of a few vowels, as spoken by an adult. */
const VOWELS: Array<[number, number, number]> = [
  [730, 1090, 2440], // a
  [530, 1840, 2480], // e
  [270, 2290, 3010], // i
  [570, 840, 2410], // o
  [300, 870, 2240], // u
  [660, 1720, 2410], // æ
];
/** Formant bandwidths in Hz. */
const BANDWIDTHS: [number, number, number] = [90, 110, 170];
/** Speakers' base pitch in Hz: the agent, then the user. */
const VOICES = [125, 205];

/** One two-pole resonator: y[n] = a·x[n] + b·y[n-1] + c·y[n-2]. */
class Resonator {
  private a = 0;
  private b = 0;
  private c = 0;
  private y1 = 0;
  private y2 = 0;

  constructor(private readonly sampleRate: number) {}

  tune(frequency: number, bandwidth: number): void {
    // Formants above Nyquist cannot be represented: keep them just under it.
    const f = Math.min(frequency, this.sampleRate * 0.45);
    this.c = -Math.exp((-2 * Math.PI * bandwidth) / this.sampleRate);
    this.b = 2 * Math.exp((-Math.PI * bandwidth) / this.sampleRate) * Math.cos((2 * Math.PI * f) / this.sampleRate);
    this.a = 1 - this.b - this.c;
  }

  step(x: number): number {
    const y = this.a * x + this.b * this.y1 + this.c * this.y2;
    this.y2 = this.y1;
    this.y1 = y;
    return y;
  }
}

/** The float signal in [-1, 1] before quantization. */
function synthesize(samples: number, sampleRate: number, random: () => number): Float32Array {
  const out = new Float32Array(samples);
  const resonators = [new Resonator(sampleRate), new Resonator(sampleRate), new Resonator(sampleRate)];
  const at = (seconds: number) => Math.round(seconds * sampleRate);
  let n = at(0.05 + random() * 0.1);
  let speaker = 0;
  while (n < samples) {
    const turnEnd = Math.min(samples, n + at(1.2 + random() * 2));
    const basePitch = VOICES[speaker] * (0.92 + random() * 0.16);
    while (n < turnEnd) {
      const length = Math.min(turnEnd - n, at(0.12 + random() * 0.14));
      const [f1, f2, f3] = VOWELS[Math.floor(random() * VOWELS.length)];
      resonators.forEach((r, i) => r.tune([f1, f2, f3][i], BANDWIDTHS[i]));
      // A falling or rising glide over the syllable, like intonation.
      const startPitch = basePitch * (0.9 + random() * 0.25);
      const endPitch = startPitch * (0.85 + random() * 0.25);
      let phase = 0;
      let peak = 0;
      for (let i = 0; i < length; i++) {
        const progress = i / length;
        const pitch = startPitch + (endPitch - startPitch) * progress;
        phase += pitch / sampleRate;
        // The glottal source: one pulse per pitch period, with a little breath noise.
        let source = (random() - 0.5) * 0.04;
        if (phase >= 1) {
          phase -= 1;
          source += 1;
        }
        const y = resonators[2].step(resonators[1].step(resonators[0].step(source)));
        // Raised-cosine envelope: no clicks at the syllable's edges.
        out[n + i] = y * 0.5 * (1 - Math.cos(2 * Math.PI * progress));
        peak = Math.max(peak, Math.abs(out[n + i]));
      }
      // The resonators' gain differs from vowel to vowel: every syllable gets the same peak.
      if (peak > 0) for (let i = 0; i < length; i++) out[n + i] /= peak;
      n += length + at(0.03 + random() * 0.07);
    }
    n += at(0.3 + random() * 0.4);
    speaker = 1 - speaker;
  }
  return out;
}

/**
 * A WAV file (RIFF, PCM 16-bit mono) of exactly `seconds` (rounded to the nearest sample) with
 * speech-like sound, varied by `seed`. Throws a RangeError for a negative, non-finite or
 * longer-than-four-hours length or a sample rate outside 8000–48000.
 */
export function synthesizeRecording(seconds: number, options: RecordingOptions = {}): Buffer {
  const sampleRate = options.sampleRate ?? DEFAULT_SAMPLE_RATE;
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > MAX_RECORDING_SECONDS) {
    throw new RangeError(`A recording lasts 0 to ${MAX_RECORDING_SECONDS} seconds, got ${seconds}`);
  }
  if (!Number.isInteger(sampleRate) || sampleRate < 8000 || sampleRate > 48000) {
    throw new RangeError(`The sample rate must be an integer from 8000 to 48000, got ${sampleRate}`);
  }
  const signal = synthesize(Math.round(seconds * sampleRate), sampleRate, seededRandom(options.seed ?? 'recording'));
  let peak = 0;
  for (const v of signal) peak = Math.max(peak, Math.abs(v));
  const gain = peak > 0 ? (PEAK * 32767) / peak : 0;
  const pcm = Int16Array.from(signal, (v) => Math.round(v * gain));
  const wav = new WaveFile();
  wav.fromScratch(1, sampleRate, '16', pcm);
  return Buffer.from(wav.toBuffer());
}

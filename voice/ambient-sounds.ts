/**
 * The ambient beds, made in code: no recordings to license, ship or download. Each is seeded noise
 * shaped for its kind, SECONDS long at 8 kHz, made to loop without a seam, computed once per process
 * on first use (a few milliseconds) and kept as PCM16 (mixing needs linear samples).
 *
 *  - `static`: a phone line's hiss (white and pink noise above 200 Hz, slowly swelling) with crackle
 *    (random pops, alone or in bursts);
 *  - `office`: low brown-noise rumble (ventilation) with runs of soft keyboard clicks;
 *  - `cafe`: babble (many unpitched voices: band-passed noise with syllable and phrase rhythm) with
 *    the clink of cups and cutlery (decaying high partials);
 *  - `call-center`: a murmur of pitched voices (a glottal pulse train through two formants that change
 *    each syllable), a few nearer than the others, over a low room murmur.
 *
 * Every bed has the same loudness (BED_RMS), so `ambient_sound_volume` means the same for each.
 */
import { AMBIENT_SOUNDS as AGENT_AMBIENT_SOUNDS } from '../shared/domain/agents/schemas';

/** A bed's name: the agents' `ambient_sound` values but `""` (one list, the schema's; a name without a bed below does not compile). */
export type AmbientSound = Exclude<(typeof AGENT_AMBIENT_SOUNDS)[number], ''>;
export const AMBIENT_SOUNDS: readonly AmbientSound[] = AGENT_AMBIENT_SOUNDS.filter((s): s is AmbientSound => s !== '');

/** Whether `value` names a bed. */
export const isAmbientSound = (value: unknown): value is AmbientSound => (AMBIENT_SOUNDS as readonly unknown[]).includes(value);

export const SAMPLE_RATE = 8000;
/** Length of one loop. */
export const SECONDS = 8;
/** RMS of every bed at volume 1: about −26 dBFS, under a voice at about −20 dBFS. */
export const BED_RMS = 1600;
/** No sample beyond this at volume 1 (pops and clinks are limited softly), so the agent's voice keeps its headroom. */
const PEAK = 12000;
/** The loop's end fades into its start over this long (equal power), so the seam is never heard. */
const CROSSFADE = Math.round(0.3 * SAMPLE_RATE);

/** A small seeded generator (mulberry32): the same bed in every process. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An RBJ biquad (Audio EQ Cookbook), direct form I; coefficients may change between samples. */
class Biquad {
  private b0 = 1;
  private b1 = 0;
  private b2 = 0;
  private a1 = 0;
  private a2 = 0;
  private x1 = 0;
  private x2 = 0;
  private y1 = 0;
  private y2 = 0;

  static lowpass(f: number, q = 0.707): Biquad {
    return new Biquad().set('lowpass', f, q);
  }
  static highpass(f: number, q = 0.707): Biquad {
    return new Biquad().set('highpass', f, q);
  }
  static bandpass(f: number, q: number): Biquad {
    return new Biquad().set('bandpass', f, q);
  }

  set(kind: 'lowpass' | 'highpass' | 'bandpass', f: number, q: number): this {
    const w = (2 * Math.PI * f) / SAMPLE_RATE;
    const cos = Math.cos(w);
    const alpha = Math.sin(w) / (2 * q);
    const a0 = 1 + alpha;
    if (kind === 'lowpass') {
      this.b0 = (1 - cos) / 2 / a0;
      this.b1 = (1 - cos) / a0;
      this.b2 = this.b0;
    } else if (kind === 'highpass') {
      this.b0 = (1 + cos) / 2 / a0;
      this.b1 = -(1 + cos) / a0;
      this.b2 = this.b0;
    } else {
      this.b0 = alpha / a0;
      this.b1 = 0;
      this.b2 = -alpha / a0;
    }
    this.a1 = (-2 * cos) / a0;
    this.a2 = (1 - alpha) / a0;
    return this;
  }

  run(x: number): number {
    const y = this.b0 * x + this.b1 * this.x1 + this.b2 * this.x2 - this.a1 * this.y1 - this.a2 * this.y2;
    this.x2 = this.x1;
    this.x1 = x;
    this.y2 = this.y1;
    this.y1 = y;
    return y;
  }
}

/** Smooth 0→1→0 gate of a voice talking in phrases (ramps of 50 ms). */
function phrases(n: number, rnd: () => number, onSec: [number, number], offSec: [number, number]): Float64Array {
  const gate = new Float64Array(n);
  const ramp = 0.05 * SAMPLE_RATE;
  let i = Math.floor(rnd() * offSec[1] * SAMPLE_RATE);
  while (i < n) {
    const len = Math.floor((onSec[0] + rnd() * (onSec[1] - onSec[0])) * SAMPLE_RATE);
    for (let k = 0; k < len && i + k < n; k++) gate[i + k] = Math.min(1, k / ramp, (len - k) / ramp);
    i += len + Math.floor((offSec[0] + rnd() * (offSec[1] - offSec[0])) * SAMPLE_RATE);
  }
  return gate;
}

/** Syllable rhythm: a raised cosine at 3–6 Hz whose rate wanders. */
function syllables(n: number, rnd: () => number): Float64Array {
  const env = new Float64Array(n);
  let phase = rnd() * 2 * Math.PI;
  let rate = 3 + rnd() * 3;
  for (let i = 0; i < n; i++) {
    if (i % 800 === 0) rate = Math.min(6, Math.max(3, rate + (rnd() - 0.5)));
    phase += (2 * Math.PI * rate) / SAMPLE_RATE;
    const c = 0.5 * (1 - Math.cos(phase));
    env[i] = c * Math.sqrt(c);
  }
  return env;
}

/** Adds a decaying noise burst (a click, a pop) at `at` to `into`. */
function burst(into: Float64Array, at: number, amp: number, tauMs: number, rnd: () => number): void {
  const tau = (tauMs / 1000) * SAMPLE_RATE;
  for (let k = 0; k < tau * 5 && at + k < into.length; k++) into[at + k]! += amp * (rnd() * 2 - 1) * Math.exp(-k / tau);
}

function staticLine(n: number, rnd: () => number): Float64Array {
  const out = new Float64Array(n);
  const hp = Biquad.highpass(200);
  let b0 = 0, b1 = 0, b2 = 0; // pink noise: Paul Kellet's economy filter
  let swell = 1;
  for (let i = 0; i < n; i++) {
    const w = rnd() * 2 - 1;
    b0 = 0.99765 * b0 + w * 0.099046;
    b1 = 0.963 * b1 + w * 0.2965164;
    b2 = 0.57 * b2 + w * 1.0526913;
    const pink = (b0 + b1 + b2 + w * 0.1848) * 0.25;
    swell += ((0.8 + rnd() * 0.4) - swell) * 0.0005;
    out[i] = hp.run((0.6 * w + pink) * swell);
  }
  const crackle = new Float64Array(n);
  for (let i = 0; i < n; i += Math.floor(rnd() * 0.35 * SAMPLE_RATE) + 40) {
    const pops = rnd() < 0.3 ? 2 + Math.floor(rnd() * 4) : 1;
    for (let p = 0, at = i; p < pops; p++, at += Math.floor(rnd() * 80) + 20) {
      burst(crackle, at, (rnd() < 0.5 ? -1 : 1) * (2 + rnd() * 4), 0.4 + rnd() * 1.2, rnd);
    }
  }
  for (let i = 0; i < n; i++) out[i]! += crackle[i]!;
  return out;
}

function office(n: number, rnd: () => number): Float64Array {
  const out = new Float64Array(n);
  const lp = Biquad.lowpass(350);
  let brown = 0;
  for (let i = 0; i < n; i++) {
    brown = 0.985 * brown + 0.15 * (rnd() * 2 - 1);
    out[i] = lp.run(brown);
  }
  // Typing: a run of 4–14 keys every 1–4 s, 90–220 ms apart; each key a 2–5 ms burst rung through a 2.2 kHz band.
  const keys = new Float64Array(n);
  for (let i = Math.floor(rnd() * SAMPLE_RATE); i < n; i += Math.floor((1 + rnd() * 3) * SAMPLE_RATE)) {
    const count = 4 + Math.floor(rnd() * 11);
    for (let k = 0, at = i; k < count && at < n; k++, at += Math.floor((0.09 + rnd() * 0.13) * SAMPLE_RATE)) {
      burst(keys, at, 0.6 + rnd() * 0.6, 2 + rnd() * 3, rnd);
    }
  }
  const click = Biquad.bandpass(2200, 1.4);
  for (let i = 0; i < n; i++) out[i]! += 2.2 * click.run(keys[i]!);
  return out;
}

function cafe(n: number, rnd: () => number): Float64Array {
  const out = new Float64Array(n);
  for (let v = 0; v < 9; v++) {
    const band = Biquad.bandpass(450 + rnd() * 1100, 1.1 + rnd() * 0.8);
    const gate = phrases(n, rnd, [1, 3.5], [0.3, 1.5]);
    const syl = syllables(n, rnd);
    const level = 0.4 + rnd() * 0.6;
    for (let i = 0; i < n; i++) out[i]! += level * gate[i]! * syl[i]! * band.run(rnd() * 2 - 1);
  }
  const room = Biquad.lowpass(600);
  for (let i = 0; i < n; i++) out[i]! += 0.05 * room.run(rnd() * 2 - 1);
  // Clinks: 2–3 partials at 1.9–3.6 kHz decaying in 30–110 ms, about every 2 s.
  for (let i = Math.floor(rnd() * SAMPLE_RATE); i < n; i += Math.floor((0.6 + rnd() * 2.8) * SAMPLE_RATE)) {
    const partials = 2 + Math.floor(rnd() * 2);
    const amp = 0.15 + rnd() * 0.25;
    for (let p = 0; p < partials; p++) {
      const f = 1900 + rnd() * 1700;
      const tau = (0.03 + rnd() * 0.08) * SAMPLE_RATE;
      const phase = rnd() * 2 * Math.PI;
      for (let k = 0; k < tau * 5 && i + k < n; k++) out[i + k]! += (amp / partials) * Math.sin(phase + (2 * Math.PI * f * k) / SAMPLE_RATE) * Math.exp(-k / tau);
    }
  }
  return out;
}

/** Vowel formants (F1, F2) a syllable picks from. */
const VOWELS: Array<[number, number]> = [[730, 1090], [270, 2290], [300, 870], [530, 1840], [660, 1720], [490, 1350], [640, 1190]];

function callCenter(n: number, rnd: () => number): Float64Array {
  const out = new Float64Array(n);
  for (let v = 0; v < 7; v++) {
    const f0 = 95 + rnd() * 130;
    const near = v < 2;
    const level = near ? 0.9 + rnd() * 0.3 : 0.3 + rnd() * 0.3;
    const f1 = new Biquad();
    const f2 = new Biquad();
    const distance = Biquad.lowpass(near ? 2600 : 1400);
    const gate = phrases(n, rnd, [0.8, 3], [0.4, 2.5]);
    let phase = rnd();
    let step = 0;
    let syllableEnd = 0;
    let envelope = 0;
    let target = 0;
    for (let i = 0; i < n; i++) {
      if (i >= syllableEnd) {
        const [a, b] = VOWELS[Math.floor(rnd() * VOWELS.length)]!;
        f1.set('bandpass', a, 4);
        f2.set('bandpass', b, 6);
        syllableEnd = i + Math.floor((0.12 + rnd() * 0.16) * SAMPLE_RATE);
        target = 0.4 + rnd() * 0.6;
      }
      envelope += ((i + 300 > syllableEnd ? 0.15 : target) - envelope) * 0.004;
      // Intonation: the pitch drifts ±15 % slowly; a pulse per period, with breath noise.
      if ((i & 63) === 0) step = (f0 * (1 + 0.15 * Math.sin((2 * Math.PI * i) / (SAMPLE_RATE * (1.3 + v * 0.2))))) / SAMPLE_RATE;
      phase += step;
      let excitation = 0.08 * (rnd() * 2 - 1);
      if (phase >= 1) {
        phase -= 1;
        excitation += 1;
      }
      const voiced = f1.run(excitation) + 0.6 * f2.run(excitation);
      out[i]! += level * gate[i]! * envelope * distance.run(voiced);
    }
  }
  const murmur = Biquad.bandpass(450, 0.8);
  const slow = syllables(n, rnd);
  for (let i = 0; i < n; i++) out[i]! += 0.04 * (0.5 + slow[i]!) * murmur.run(rnd() * 2 - 1);
  return out;
}

const MAKERS: Record<AmbientSound, { seed: number; make: (n: number, rnd: () => number) => Float64Array }> = {
  static: { seed: 0x57a71c, make: staticLine },
  office: { seed: 0x0ff1ce, make: office },
  cafe: { seed: 0xcafe, make: cafe },
  'call-center': { seed: 0xca11, make: callCenter },
};

const beds = new Map<AmbientSound, Int16Array>();

/** Makes every bed now (about 0.3 s of CPU once), so the first call with a sound does not stall the process's other calls while its bed is made. */
export function preloadAmbientBeds(): void {
  for (const sound of AMBIENT_SOUNDS) ambientBed(sound);
}

/** The bed of `sound` at volume 1: SECONDS of PCM16 at 8 kHz whose last sample leads into its first. Made once, then shared (do not write to it). */
export function ambientBed(sound: AmbientSound): Int16Array {
  let bed = beds.get(sound);
  if (bed) return bed;
  const n = SECONDS * SAMPLE_RATE;
  const { seed, make } = MAKERS[sound];
  const raw = make(n + CROSSFADE, random(seed));
  // The loop: its first CROSSFADE samples fade from the samples that follow its end into its own,
  // so playing on from the last sample to the first is playing on from sample n - 1 to sample n.
  for (let i = 0; i < CROSSFADE; i++) {
    const t = (i / CROSSFADE) * (Math.PI / 2);
    raw[i] = raw[i]! * Math.sin(t) + raw[n + i]! * Math.cos(t);
  }
  let sum = 0;
  for (let i = 0; i < n; i++) sum += raw[i]! * raw[i]!;
  const scale = BED_RMS / Math.sqrt(sum / n);
  bed = new Int16Array(n);
  for (let i = 0; i < n; i++) bed[i] = Math.round(PEAK * Math.tanh((raw[i]! * scale) / PEAK));
  beds.set(sound, bed);
  return bed;
}

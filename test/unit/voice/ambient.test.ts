import { AMBIENT_SOUNDS, AmbientMixer, AmbientPacer, ambientMixerFor, FRAME_BYTES, type AmbientSound } from '../../../voice/ambient';
import { ambientBed, BED_RMS, SAMPLE_RATE, SECONDS } from '../../../voice/ambient-sounds';
import { encodeSample, MULAW_DECODE } from '../../../voice/mulaw';

/** Sun's g711.c linear2ulaw, written out independently of voice/mulaw.ts. */
function referenceEncode(pcm: number): number {
  const sign = (pcm >> 8) & 0x80;
  if (sign) pcm = -pcm;
  if (pcm > 32635) pcm = 32635;
  pcm += 0x84;
  const top = (pcm >> 7) & 0xff;
  const exponent = top < 2 ? 0 : Math.floor(Math.log2(top)); // g711.c's exp_lut: 0,0,1,1,2,2,2,2,3…
  const mantissa = (pcm >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

const decode = (mulaw: Uint8Array) => Int16Array.from(mulaw, (b) => MULAW_DECODE[b]!);
const rms = (pcm: ArrayLike<number>) => {
  let sum = 0;
  for (let i = 0; i < pcm.length; i++) sum += pcm[i]! * pcm[i]!;
  return Math.sqrt(sum / pcm.length);
};
const silence = (bytes: number) => Buffer.alloc(bytes, 0xff);
/** Bytes that look like speech: a 220 Hz tone at about −12 dBFS, μ-law. */
const speech = (bytes: number) => Buffer.from(Array.from({ length: bytes }, (_, i) => encodeSample(Math.round(8000 * Math.sin((2 * Math.PI * 220 * i) / SAMPLE_RATE)))));

/** Power share (dB) of 8 bands of 500 Hz, from a Hann-windowed DFT of 40 frames spread over the bed. */
function bands(pcm: Int16Array): number[] {
  const N = 256;
  const cos = Float64Array.from({ length: N }, (_, i) => Math.cos((2 * Math.PI * i) / N));
  const sin = Float64Array.from({ length: N }, (_, i) => Math.sin((2 * Math.PI * i) / N));
  const power = new Array<number>(8).fill(0);
  const x = new Float64Array(N);
  for (let start = 0; start + N <= pcm.length; start += Math.floor(pcm.length / 40)) {
    for (let n = 0; n < N; n++) x[n] = pcm[start + n]! * (0.5 - 0.5 * cos[n]!);
    for (let k = 1; k < N / 2; k++) {
      let re = 0;
      let im = 0;
      for (let n = 0; n < N; n++) {
        re += x[n]! * cos[(k * n) % N]!;
        im -= x[n]! * sin[(k * n) % N]!;
      }
      power[Math.floor(k / 16)]! += re * re + im * im;
    }
  }
  const total = power.reduce((a, b) => a + b, 0);
  return power.map((p) => 10 * Math.log10(p / total));
}

describe('μ-law tables', () => {
  it('encode every 16-bit sample as the G.711 reference does, and decode to the reference levels', () => {
    for (let s = -32768; s <= 32767; s++) if (encodeSample(s) !== referenceEncode(s)) throw new Error(`sample ${s}: ${encodeSample(s)} ≠ ${referenceEncode(s)}`);
    expect([MULAW_DECODE[0x00], MULAW_DECODE[0x80], MULAW_DECODE[0xff], MULAW_DECODE[0x7f], MULAW_DECODE[0xf0]]).toEqual([-32124, 32124, 0, 0, 120]);
    for (let b = 0; b < 256; b++) expect(encodeSample(MULAW_DECODE[b]!)).toBe(b === 0x7f ? 0xff : b); // 0x7f is μ-law's "negative zero"
  });
});

describe('AmbientMixer', () => {
  it('at volume 0 passes the agent audio through byte for byte; no sound or no volume gives no mixer', () => {
    const agent = Buffer.from(Array.from({ length: 999 }, (_, i) => (i * 37) & 0xff));
    expect(new AmbientMixer('cafe', 0).mix(agent)).toEqual(agent);
    expect(ambientMixerFor({ ambient_sound: '', ambient_sound_volume: 1 })).toBeNull();
    expect(ambientMixerFor({ ambient_sound: 'office', ambient_sound_volume: 0 })).toBeNull();
    expect(ambientMixerFor({ ambient_sound: 'rain', ambient_sound_volume: 1 })).toBeNull(); // stored before validation: silent, never a crash
    expect(ambientMixerFor({ ambient_sound: 'office', ambient_sound_volume: 0.5 })).toBeInstanceOf(AmbientMixer);
    expect(() => new AmbientMixer('rain' as AmbientSound, 1)).toThrow(/office, cafe, call-center, static/);
  });

  it('mixed into silence gives exactly the bed, and under speech adds the bed to it', () => {
    for (const sound of AMBIENT_SOUNDS) {
      const bytes = 8000;
      const mixed = new AmbientMixer(sound, 0.7).mix(silence(bytes));
      expect(mixed).toEqual(new AmbientMixer(sound, 0.7).bed(bytes));
      expect(rms(decode(mixed))).toBeGreaterThan(0.5 * 0.7 * BED_RMS);
    }
    const voice = speech(8000);
    const under = new AmbientMixer('office', 0.5).mix(voice);
    const bed = decode(new AmbientMixer('office', 0.5).bed(8000));
    const difference = decode(under).map((s, i) => s - MULAW_DECODE[voice[i]!]!);
    // What was added is the bed, give or take μ-law's rounding (≤ 3 % of a loud sample's level).
    expect(rms(difference.map((d, i) => d - bed[i]!))).toBeLessThan(0.25 * rms(bed));
    expect(rms(difference)).toBeGreaterThan(0.8 * rms(bed));
  });

  it('scales the bed with the volume (RMS in proportion, within 5 %)', () => {
    for (const sound of AMBIENT_SOUNDS) {
      const at = (v: number) => rms(decode(new AmbientMixer(sound, v).bed(4 * SAMPLE_RATE)));
      const full = at(1);
      expect(full).toBeGreaterThan(0.8 * BED_RMS);
      expect(full).toBeLessThan(1.2 * BED_RMS);
      for (const v of [0.1, 0.25, 0.5, 0.75]) expect(Math.abs(at(v) / full - v)).toBeLessThan(0.05 * v + 0.01);
    }
  });

  it('clips instead of wrapping when loud speech meets the bed', () => {
    const loud = Buffer.alloc(SAMPLE_RATE, 0x80); // +32124, μ-law's loudest
    const mixed = decode(new AmbientMixer('static', 1).mix(loud));
    expect(Math.min(...mixed)).toBeGreaterThan(0);
  });

  it('gives each kind its own non-silent, seamless bed', () => {
    const spectra = new Map<AmbientSound, number[]>();
    for (const sound of AMBIENT_SOUNDS) {
      const bed = ambientBed(sound);
      expect(bed).toHaveLength(SECONDS * SAMPLE_RATE);
      expect(ambientBed(sound)).toBe(bed); // made once
      expect(rms(bed)).toBeGreaterThan(0.8 * BED_RMS);
      // The seam (last sample → first) is no bigger a step than the bed's ordinary steps.
      const steps = Array.from({ length: bed.length - 1 }, (_, i) => Math.abs(bed[i + 1]! - bed[i]!)).sort((a, b) => a - b);
      expect(Math.abs(bed[0]! - bed[bed.length - 1]!)).toBeLessThanOrEqual(steps[Math.floor(0.99 * steps.length)]!);
      spectra.set(sound, bands(bed));
    }
    // Distinct: every two kinds differ by at least 4 dB in some band.
    for (const a of AMBIENT_SOUNDS) {
      for (const b of AMBIENT_SOUNDS) {
        if (a >= b) continue;
        const gap = Math.max(...spectra.get(a)!.map((x, i) => Math.abs(x - spectra.get(b)![i]!)));
        expect({ a, b, distinct: gap > 4 }).toEqual({ a, b, distinct: true });
      }
    }
    // Their character: the office is a low rumble; static is a hiss spread over the whole band; voices sit in the speech band.
    expect(spectra.get('office')![0]).toBeGreaterThan(-1);
    const statics = spectra.get('static')!;
    expect(Math.max(...statics) - Math.min(...statics)).toBeLessThan(4);
    for (const voices of ['cafe', 'call-center'] as const) {
      const s = spectra.get(voices)!;
      expect(Math.max(s[1]!, s[2]!)).toBe(Math.max(...s)); // loudest between 500 and 1500 Hz
    }
  });

  it('keeps its place in the loop across calls, mixed audio and bed frames alike, and wraps around', () => {
    const oneGo = new AmbientMixer('call-center', 0.6).bed(3 * FRAME_BYTES + 500);
    const mixer = new AmbientMixer('call-center', 0.6);
    const pieces = [mixer.bed(FRAME_BYTES), mixer.mix(silence(7)), mixer.mix(silence(FRAME_BYTES - 7)), mixer.bed(FRAME_BYTES + 123), mixer.mixPayload(silence(377).toString('base64'))];
    expect(Buffer.concat(pieces.map((p) => (typeof p === 'string' ? Buffer.from(p, 'base64') : p)))).toEqual(oneGo);

    const loop = SECONDS * SAMPLE_RATE;
    const wrapping = new AmbientMixer('cafe', 1);
    const first = wrapping.bed(loop + 1000);
    expect(first.subarray(loop)).toEqual(first.subarray(0, 1000));
  });
});

describe('AmbientPacer', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  /** A pacer whose sends are recorded as the carrier would queue them: ms of audio queued since the start. */
  function pacer(sound: AmbientSound = 'office') {
    const start = Date.now();
    const sent: Buffer[] = [];
    let queuedMs = 0;
    const mixer = new AmbientMixer(sound, 0.5);
    const p = new AmbientPacer({
      mixer,
      now: () => Date.now(),
      send: (payload) => {
        const b = Buffer.from(payload, 'base64');
        sent.push(b);
        queuedMs += b.length / 8;
      },
    });
    const agent = (ms: number) => {
      const out = Buffer.from(p.agent(speech(ms * 8).toString('base64')), 'base64');
      queuedMs += out.length / 8;
      return out;
    };
    /** The carrier plays in real time from the start: audio queued ahead of what has played. */
    const ahead = () => start + queuedMs - Date.now();
    return { p, sent, agent, ahead };
  }

  it('sends one 20 ms bed frame every 20 ms, two frames ahead, never leaving the carrier without audio', () => {
    const { p, sent, ahead } = pacer();
    p.start();
    expect(p.active).toBe(true);
    expect(sent).toHaveLength(2);
    for (let t = 0; t < 1000; t++) {
      jest.advanceTimersByTime(1);
      expect(ahead()).toBeGreaterThanOrEqual(0);
      expect(ahead()).toBeLessThanOrEqual(40);
    }
    expect(sent).toHaveLength(52);
    expect(sent.every((f) => f.length === FRAME_BYTES)).toBe(true);
    expect(Buffer.concat(sent)).toEqual(new AmbientMixer('office', 0.5).bed(52 * FRAME_BYTES));
  });

  it('sends no bed while agent audio is queued, resumes as it ends, and continues the loop through it', () => {
    const { p, sent, agent, ahead } = pacer();
    p.start();
    jest.advanceTimersByTime(100);
    const before = sent.length;
    const reference = new AmbientMixer('office', 0.5);
    reference.bed(before * FRAME_BYTES);
    const mixed = agent(1000); // one second of speech, sent at once as the model's deltas arrive
    expect(mixed).toEqual(reference.mix(speech(8000)));
    jest.advanceTimersByTime(900);
    expect(sent.length).toBe(before);
    for (let t = 0; t < 400; t++) {
      jest.advanceTimersByTime(1);
      expect(ahead()).toBeGreaterThanOrEqual(0);
      expect(ahead()).toBeLessThanOrEqual(1040);
    }
    expect(sent.length).toBeGreaterThan(before + 10);
    expect(ahead()).toBeLessThanOrEqual(40);
    // The first bed frame after the speech continues the loop where the speech left it.
    expect(sent[before]).toEqual(reference.bed(FRAME_BYTES));
  });

  it('starts the bed again at once after a clear, and stops for good', () => {
    const { p, sent, agent } = pacer('static');
    p.start();
    agent(2000);
    jest.advanceTimersByTime(300);
    const before = sent.length;
    p.cleared(); // the caller interrupted: Twilio dropped the rest
    expect(sent.length).toBe(before + 2);
    p.stop();
    expect(p.active).toBe(false);
    jest.advanceTimersByTime(5000);
    expect(sent.length).toBe(before + 2);
  });

  it('after a stalled event loop, refills from now instead of sending the missed frames in a burst', () => {
    const { p, sent } = pacer();
    p.start();
    jest.advanceTimersByTime(200);
    const before = sent.length;
    jest.setSystemTime(Date.now() + 500); // the clock moves on while no timer runs
    jest.advanceTimersByTime(20);
    expect(sent.length - before).toBeLessThanOrEqual(3);
  });
});

/**
 * The widget's sample-rate conversion (widget/src/resample.ts): the microphone at the context's
 * own rate (48 kHz, 44.1 kHz) to the call's 24 kHz, and the agent's 24 kHz back, in blocks of any
 * size, with the right number of samples and the signal kept (a tone stays that tone).
 */
import { createResampler, fromPcm16, toPcm16 } from '../../../widget/src/resample';

const tone = (rate: number, hz: number, seconds: number) => Float32Array.from({ length: Math.round(rate * seconds) }, (_, i) => 0.5 * Math.sin((2 * Math.PI * hz * i) / rate));

/** Feeds `input` in blocks of `block` samples (128: an AudioWorklet's render quantum). */
function run(from: number, to: number, input: Float32Array, block = 128): Float32Array {
  const r = createResampler(from, to);
  const parts: number[] = [];
  for (let i = 0; i < input.length; i += block) parts.push(...r.push(input.subarray(i, i + block)));
  return Float32Array.from(parts);
}

/** The tone's frequency, from its zero crossings. */
function frequency(samples: Float32Array, rate: number): number {
  let crossings = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 && samples[i]! >= 0) crossings++;
  return (crossings * rate) / samples.length;
}

const rms = (s: Float32Array) => Math.sqrt(s.reduce((a, x) => a + x * x, 0) / s.length);

it.each([
  [48_000, 24_000],
  [44_100, 24_000],
  [24_000, 48_000],
  [24_000, 44_100],
  [16_000, 24_000],
])('turns %i Hz into %i Hz: as many samples as the time takes, the tone kept', (from, to) => {
  const out = run(from, to, tone(from, 440, 1));
  expect(Math.abs(out.length - to)).toBeLessThanOrEqual(2);
  expect(frequency(out, to)).toBeGreaterThan(430);
  expect(frequency(out, to)).toBeLessThan(450);
  expect(rms(out)).toBeGreaterThan(0.3);
});

it('gives the same samples whatever the blocks it is fed in', () => {
  const input = tone(48_000, 300, 0.2);
  const whole = run(48_000, 24_000, input, input.length);
  const small = run(48_000, 24_000, input, 128);
  const odd = run(48_000, 24_000, input, 77);
  expect(small.length).toBe(whole.length);
  expect(odd.length).toBe(whole.length);
  for (let i = 0; i < whole.length; i++) {
    expect(small[i]).toBeCloseTo(whole[i]!, 6);
    expect(odd[i]).toBeCloseTo(whole[i]!, 6);
  }
});

it('damps a tone above the new Nyquist frequency when it downsamples (it would fold back into speech)', () => {
  const high = run(48_000, 24_000, tone(48_000, 11_900, 0.5));
  // Unfiltered, every other sample would keep it whole (rms 0.35).
  expect(rms(high)).toBeLessThan(0.18);
});

it('is self-contained, so the AudioWorklet can be built from its text', () => {
  const rebuilt = new Function(`return (${createResampler.toString()})`)() as typeof createResampler;
  expect(rebuilt(48_000, 24_000).push(new Float32Array(256)).length).toBeGreaterThan(120);
});

it('converts to and from PCM16 little-endian', () => {
  const bytes = toPcm16(Float32Array.from([0, 0.5, -0.5, 1, -1]));
  expect([...bytes.subarray(0, 4)]).toEqual([0, 0, 0x00, 0x40]);
  expect([...fromPcm16(bytes)].map((x) => Math.round(x * 100) / 100)).toEqual([0, 0.5, -0.5, 1, -1]);
});

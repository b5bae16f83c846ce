import { WaveFile } from 'wavefile';
import { synthesizeRecording } from '../../../shared/adapters/recording/audio';

/** Parses a WAV with wavefile and measures it. */
function measure(bytes: Buffer) {
  const wav = new WaveFile(bytes);
  const fmt = wav.fmt as { audioFormat: number; numChannels: number; sampleRate: number; bitsPerSample: number };
  const samples = wav.getSamples(false, Float64Array) as unknown as Float64Array;
  let sum = 0;
  for (const s of samples) sum += (s / 32768) ** 2;
  return { fmt, samples, seconds: samples.length / fmt.sampleRate, rms: samples.length ? Math.sqrt(sum / samples.length) : 0 };
}

describe('synthesizeRecording', () => {
  it('is a PCM 16-bit mono WAV at 8 kHz of exactly the given length, 16 KB a second', () => {
    const bytes = synthesizeRecording(3, { seed: 'call-1' });
    expect(bytes.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(bytes.subarray(8, 12).toString('ascii')).toBe('WAVE');
    const { fmt, samples, seconds } = measure(bytes);
    expect(fmt).toMatchObject({ audioFormat: 1, numChannels: 1, sampleRate: 8000, bitsPerSample: 16 });
    expect(samples).toHaveLength(24_000);
    expect(seconds).toBe(3);
    expect(bytes.length).toBe(44 + 48_000);
  });

  it.each([1, 2.5, 7, 20])('is audible, not silence, for %s s (RMS above -30 dBFS)', (secs) => {
    const { seconds, rms } = measure(synthesizeRecording(secs, { seed: `call-${secs}` }));
    expect(seconds).toBeCloseTo(secs, 4);
    expect(rms).toBeGreaterThan(0.03);
  });

  it('alternates sound and pauses, like a conversation (not one continuous tone)', () => {
    const { samples } = measure(synthesizeRecording(10, { seed: 'turns' }));
    const window = 400; // 50 ms
    const levels: number[] = [];
    for (let i = 0; i + window <= samples.length; i += window) {
      let sum = 0;
      for (let j = i; j < i + window; j++) sum += (samples[j] / 32768) ** 2;
      levels.push(Math.sqrt(sum / window));
    }
    const quiet = levels.filter((l) => l < 0.005).length;
    const loud = levels.filter((l) => l > 0.05).length;
    expect(quiet).toBeGreaterThan(levels.length * 0.1);
    expect(loud).toBeGreaterThan(levels.length * 0.3);
  });

  it('is the same for the same seed and differs between seeds', () => {
    expect(synthesizeRecording(2, { seed: 'a' }).equals(synthesizeRecording(2, { seed: 'a' }))).toBe(true);
    expect(synthesizeRecording(2, { seed: 'a' }).equals(synthesizeRecording(2, { seed: 'b' }))).toBe(false);
  });

  it('honours another sample rate', () => {
    const { fmt, seconds } = measure(synthesizeRecording(2, { sampleRate: 16000 }));
    expect(fmt.sampleRate).toBe(16000);
    expect(seconds).toBe(2);
  });

  it('makes an empty but valid file for zero seconds', () => {
    const { samples } = measure(synthesizeRecording(0));
    expect(samples).toHaveLength(0);
  });

  it.each([-1, Number.NaN, Infinity, 4 * 3600 + 1])('refuses a length of %s', (secs) => {
    expect(() => synthesizeRecording(secs)).toThrow(RangeError);
  });

  it('refuses a sample rate outside 8000–48000', () => {
    expect(() => synthesizeRecording(1, { sampleRate: 4000 })).toThrow(RangeError);
  });
});

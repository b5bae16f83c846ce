/**
 * Sample-rate conversion for web calls (docs/api.md, "The web widget"). The call speaks PCM16 at
 * 24 kHz; the browser captures at its AudioContext's own rate (Firefox refuses a microphone source
 * on a context of another rate, ../shared/spec/references.md, "Browsers"), so the widget converts
 * in code: the microphone to 24 kHz in an AudioWorklet (capture-worklet.ts), and the agent's audio
 * from 24 kHz to the context's rate for playback.
 *
 * `createResampler` must stay self-contained (no reference to anything outside its body): the
 * worklet's source is built from its text (`Function.prototype.toString`), since a worklet module
 * cannot import the widget's bundle.
 */

/** A stateful converter of a continuous mono stream from `fromRate` to `toRate`: feed it blocks in order. */
export function createResampler(fromRate: number, toRate: number): { push(input: Float32Array): Float32Array; reset(): void } {
  const step = fromRate / toRate;
  // Downsampling averages the input over each output sample's span (a box filter), so a tone
  // above the new Nyquist frequency does not fold back into speech as loudly as it would if
  // picked sample by sample; upsampling interpolates linearly.
  const span = step > 1 ? step : 0;
  // The next output sample's position in the input, counted from the start of `tail` (the input
  // samples an output still needs, kept from the blocks before).
  let pos = 0;
  let tail = new Float32Array(0);
  return {
    push(input) {
      if (fromRate === toRate) return input.slice();
      const joined = new Float32Array(tail.length + input.length);
      joined.set(tail);
      joined.set(input, tail.length);
      const last = joined.length - 1;
      // How many output samples this block completes: each needs the input up to ceil(its position + span / 2).
      const count = Math.max(0, Math.floor((last - span / 2 - pos) / step) + 1);
      const out = new Float32Array(count);
      for (let k = 0; k < count; k++, pos += step) {
        if (span) {
          let sum = 0;
          let n = 0;
          const hi = Math.floor(pos + span / 2);
          for (let i = Math.max(0, Math.ceil(pos - span / 2)); i <= hi; i++) {
            sum += joined[i]!;
            n++;
          }
          out[k] = n ? sum / n : joined[Math.round(pos)]!;
        } else {
          const i = Math.floor(pos);
          out[k] = joined[i]! + (joined[Math.min(i + 1, last)]! - joined[i]!) * (pos - i);
        }
      }
      const keepFrom = Math.max(0, Math.min(joined.length, Math.floor(pos - span / 2)));
      tail = joined.slice(keepFrom);
      pos -= keepFrom;
      return out;
    },
    reset() {
      pos = 0;
      tail = new Float32Array(0);
    },
  };
}

/** Float samples (−1…1) as PCM16 little-endian bytes. */
export function toPcm16(samples: Float32Array): Uint8Array {
  const out = new Uint8Array(samples.length * 2);
  const view = new DataView(out.buffer);
  for (let i = 0; i < samples.length; i++) view.setInt16(i * 2, Math.max(-32768, Math.min(32767, Math.round(samples[i]! * 32767))), true);
  return out;
}

/** PCM16 little-endian bytes as float samples (−1…1). */
export function fromPcm16(bytes: Uint8Array): Float32Array {
  const n = bytes.length >> 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = view.getInt16(i * 2, true) / 32768;
  return out;
}

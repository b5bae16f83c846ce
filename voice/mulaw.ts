/**
 * G.711 μ-law, the carrier's audio (8 kHz, one byte a sample), by tables built once: decoding is
 * one lookup; encoding is one lookup by the sample's magnitude without its 2 low bits, which loses
 * nothing (the encoder's bias, 0x84, is a multiple of 4, so its level boundaries are too).
 * The arithmetic is the reference one (ITU-T G.711, as in Sun's g711.c): bias 0x84, clip 32635.
 */

const BIAS = 0x84;
const CLIP = 32635;

/** The reference encoder, used only to build the table. */
function encodeSlow(pcm: number): number {
  let sign = 0;
  if (pcm < 0) {
    sign = 0x80;
    pcm = -pcm;
  }
  if (pcm > CLIP) pcm = CLIP;
  pcm += BIAS;
  let exponent = 7;
  for (let mask = 0x4000; (pcm & mask) === 0 && exponent > 0; mask >>= 1) exponent--;
  const mantissa = (pcm >> (exponent + 3)) & 0x0f;
  return ~(sign | (exponent << 4) | mantissa) & 0xff;
}

/** μ-law byte → linear PCM16. */
export const MULAW_DECODE: Int16Array = (() => {
  const t = new Int16Array(256);
  for (let i = 0; i < 256; i++) {
    const u = ~i & 0xff;
    const exponent = (u >> 4) & 0x07;
    const magnitude = ((((u & 0x0f) << 3) + BIAS) << exponent) - BIAS;
    t[i] = u & 0x80 ? -magnitude : magnitude;
  }
  return t;
})();

/**
 * A magnitude's byte, positive: `MULAW_MAGNITUDE[|s| >> 2]`; a negative sample's byte is that `& 0x7f`
 * (the sign bit, inverted as all of μ-law is). Sample 32768 (from −32768) has its slot, clipped as the rest.
 */
export const MULAW_MAGNITUDE: Uint8Array = (() => {
  const t = new Uint8Array(8193);
  for (let i = 0; i <= 8192; i++) t[i] = encodeSlow(i << 2);
  return t;
})();

/** μ-law's silence (positive zero). */
export const MULAW_SILENCE = 0xff;

/** One PCM16 sample (any integer; clipped to 16 bits) → μ-law. */
export function encodeSample(pcm: number): number {
  if (pcm > 32767) pcm = 32767;
  else if (pcm < -32768) pcm = -32768;
  return pcm < 0 ? MULAW_MAGNITUDE[-pcm >> 2]! & 0x7f : MULAW_MAGNITUDE[pcm >> 2]!;
}

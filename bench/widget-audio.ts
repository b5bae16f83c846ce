import { buildSync } from 'esbuild';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { launchBrowser } from '../test/support/browser';

/**
 * (webaudio) What the widget's sample-rate conversion costs the visitor's browser (issue 34):
 * the microphone captured at the AudioContext's own rate (48 kHz here, 44.1 kHz elsewhere) and
 * resampled to the call's 24 kHz with PCM16 made of it, as the capture AudioWorklet does
 * (widget/src/call.ts), and the agent's 24 kHz audio resampled to 48 kHz for playback. Measured in
 * headless Chromium, in CPU milliseconds per second of audio:
 * - the worklet itself: an OfflineAudioContext at 48 kHz renders SECONDS of a tone through the
 *   capture processor (the widget's own worklet source) and, interleaved, through a processor
 *   that only passes its input on; the difference of the two renders is the worklet's work;
 * - the same code on the page's thread (128-sample blocks, as a render quantum), which times each
 *   direction on its own.
 *
 *   npx tsx bench/widget-audio.ts
 */
// The page's globals (the bench's own tsconfig has no DOM library).
declare const window: any;
declare const OfflineAudioContext: any;
declare const OscillatorNode: any;
declare const AudioWorkletNode: any;
declare const AudioContext: any;

const SECONDS = Number(process.env.BENCH_WEBAUDIO_SECONDS ?? 60);
const ROUNDS = 5;

export async function widgetAudioBenchmark(): Promise<string> {
  const bundle = buildSync({
    entryPoints: [join(__dirname, '..', 'widget', 'src', 'resample.ts')], bundle: true, format: 'iife', globalName: 'VapResample', target: 'es2020', minify: true, write: false,
  }).outputFiles[0]!.text;
  // A page on http://127.0.0.1 (a secure context: AudioWorklet exists there, not on about:blank).
  const site = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>bench</title>'));
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${(site.address() as AddressInfo).port}/`);
    // tsx names functions with a `__name` helper the page does not have.
    await page.addScriptTag({ content: `window.__name = (f) => f;\n${bundle}` });
    const result = await page.evaluate(async (seconds: number, rounds: number) => {
      const w = window as unknown as { VapResample: typeof import('../widget/src/resample') };
      const { createResampler } = w.VapResample;
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      // The page's thread: capture (48 kHz → 24 kHz PCM16, 128-sample blocks) and playback (24 kHz → 48 kHz, 80 ms chunks).
      const mic = Float32Array.from({ length: 48_000 * seconds }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 440 * i) / 48_000));
      const agent = Float32Array.from({ length: 24_000 * seconds }, (_, i) => 0.5 * Math.sin((2 * Math.PI * 220 * i) / 24_000));
      const capture: number[] = [];
      const playback: number[] = [];
      for (let round = 0; round < rounds; round++) {
        const r = createResampler(48_000, 24_000);
        let t = performance.now();
        let sink = 0;
        for (let i = 0; i < mic.length; i += 128) {
          const out = r.push(mic.subarray(i, i + 128));
          const pcm = new Int16Array(out.length);
          for (let j = 0; j < out.length; j++) {
            const v = Math.round(out[j]! * 32767);
            pcm[j] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
          }
          sink += pcm.length;
        }
        capture.push((performance.now() - t) / seconds);
        const back = createResampler(24_000, 48_000);
        t = performance.now();
        for (let i = 0; i < agent.length; i += 1920) sink += back.push(agent.subarray(i, i + 1920)).length;
        playback.push((performance.now() - t) / seconds);
        if (sink < 0) throw new Error('unreachable');
      }
      // The worklet itself, in an OfflineAudioContext.
      let worklet: { capture: number; passThrough: number } | string;
      try {
        const source = `const createResampler = ${createResampler.toString()};
class Capture extends AudioWorkletProcessor {
  constructor() { super(); this.r = createResampler(sampleRate, 24000); this.buf = new Int16Array(1920); this.n = 0; }
  process(inputs, outputs) {
    const ch = inputs[0] && inputs[0][0];
    if (!ch) return true;
    const out = this.r.push(ch);
    for (let i = 0; i < out.length; i++) {
      const v = Math.round(out[i] * 32767);
      this.buf[this.n++] = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
      if (this.n === 1920) { this.buf = new Int16Array(1920); this.n = 0; }
    }
    return true;
  }
}
class Pass extends AudioWorkletProcessor {
  process(inputs, outputs) { const ch = inputs[0] && inputs[0][0]; if (ch) outputs[0][0].set(ch); return true; }
}
registerProcessor('bench-capture', Capture);
registerProcessor('bench-pass', Pass);`;
        const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
        const render = async (name: string) => {
          const ctx = new OfflineAudioContext(1, 48_000 * seconds, 48_000);
          await ctx.audioWorklet.addModule(url);
          const osc = new OscillatorNode(ctx, { frequency: 440 });
          const node = new AudioWorkletNode(ctx, name, { numberOfInputs: 1, numberOfOutputs: 1, outputChannelCount: [1] });
          osc.connect(node).connect(ctx.destination);
          osc.start();
          const t = performance.now();
          await ctx.startRendering();
          return (performance.now() - t) / seconds;
        };
        const withCapture: number[] = [];
        const pass: number[] = [];
        for (let round = 0; round < rounds; round++) {
          withCapture.push(await render('bench-capture'));
          pass.push(await render('bench-pass'));
        }
        worklet = { capture: median(withCapture), passThrough: median(pass) };
      } catch (err) {
        worklet = String((err as Error)?.message ?? err);
      }
      return { capture: median(capture), playback: median(playback), worklet, sampleRate: new AudioContext().sampleRate };
    }, SECONDS, ROUNDS);
    const ms = (x: number) => `${x.toFixed(3)} ms`;
    const w = result.worklet;
    return [
      '## (webaudio) Web calls: the widget\'s resampling in the browser',
      '',
      `Headless Chromium (${(await browser.version()).replace(/^HeadlessChrome\//, 'Chromium ')}), ${SECONDS} s of a 440 Hz tone, median of ${ROUNDS} rounds; bench/widget-audio.ts. The widget captures at the AudioContext's own rate (Firefox refuses a microphone on a context of another rate) and resamples to the call's 24 kHz in an AudioWorklet; the agent's 24 kHz is resampled to the context's rate for playback (widget/src/resample.ts).`,
      '',
      '| work, per second of audio | CPU |',
      '|---|---|',
      typeof w === 'string'
        ? `| the capture worklet in an OfflineAudioContext | not measured: ${w} |`
        : `| the capture worklet (48 kHz → 24 kHz PCM16), OfflineAudioContext render minus a pass-through worklet's (${ms(w.passThrough)}) | **${ms(Math.max(0, w.capture - w.passThrough))}** |`,
      `| the same resampling and PCM16 on the page's thread (128-sample blocks) | ${ms(result.capture)} |`,
      `| playback: the agent's 24 kHz → 48 kHz (80 ms chunks) | ${ms(result.playback)} |`,
      '',
      `So the conversion costs the visitor's browser about ${ms((typeof w === 'string' ? result.capture : Math.max(0, w.capture - w.passThrough)) + result.playback)} of CPU per second of call (capture and playback), ${(((typeof w === 'string' ? result.capture : Math.max(0, w.capture - w.passThrough)) + result.playback) / 10).toFixed(2)} % of one core. The server's side is unchanged: the browser still sends PCM16 at 24 kHz, relayed untouched, so the web-call relay figures of "(voice)" (p99 per frame, added by the runtime) stand as measured there.`,
      '',
    ].join('\n');
  } finally {
    await browser.close();
    site.close();
  }
}

if (require.main === module) {
  widgetAudioBenchmark().then(
    (section) => {
      console.log(section);
      process.exit(0);
    },
    (err) => {
      console.error(err);
      process.exit(1);
    },
  );
}

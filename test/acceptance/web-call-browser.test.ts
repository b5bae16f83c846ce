/**
 * A web call from the widget in a real browser (Debian's headless chromium with its fake
 * microphone: --use-fake-ui-for-media-stream --use-fake-device-for-media-stream), against the
 * local runtime and a scripted Realtime stand-in: the widget's call button asks for the
 * microphone, starts the call, its microphone audio reaches the stand-in, the stand-in's audio is
 * played by the page, the transcript shows as it happens, and the hang-up button ends the call,
 * which keeps its transcript. A refused microphone and a platform without a speech model are told
 * in words. The browser is also constrained as Firefox is (../shared/TOOLING.md): its AudioContext
 * forced to 48 kHz and a microphone source on a context of another rate refused (NotSupportedError),
 * so the widget must capture at the context's rate and resample; a hang-up during "Connecting…"
 * leaves no call open; a failure after `started` is told in words and ends the call.
 */
declare const window: any;
declare const navigator: any;
declare const DOMException: any;
declare const document: any;
import type { Browser, Page } from 'puppeteer-core';
import { launchBrowser } from '../support/browser';
import { usePlatform } from '../support/platform';
import { startRealtimeStandIn, type ModelConnection, type RealtimeStandIn } from '../support/realtime-stand-in';
import { until } from '../support/until';
import { pcm16Tone } from '../support/web-call-client';
import { startSite } from '../support/widget';

let model: RealtimeStandIn;
let script: (m: ModelConnection) => Promise<void> = async () => undefined;
const ready = (async () => {
  model = await startRealtimeStandIn((m) => script(m));
})();
beforeAll(() => ready);

const local = usePlatform({
  demo: true,
  get env() {
    return { REALTIME_BASE_URL: model.url, REALTIME_API_KEY: 'sk-stand-in' };
  },
} as never);
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const HOST = '[data-voice-agent-widget]';
const W = `${HOST} >>>`;
let browser: Browser;
let site: Awaited<ReturnType<typeof startSite>>;
let widgetId: string;

beforeAll(async () => {
  site = await startSite((req, res) => {
    const q = new URL(req.url ?? '/', 'http://x').searchParams;
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Call us</title></head><body><h1>Call us</h1>
<script src="${local().url}/api/v1/widget/embed.js" data-widget-id="${q.get('widget')}" async></script></body></html>`);
  });
  const widget = await api('POST', '/api/v1/widget-settings', { body: { name: 'Voice widget', title: 'Harbor Street', allowed_origins: [site.url], voice_enabled: true } });
  expect(widget.status).toBe(200);
  expect(widget.body.data.voice_enabled).toBe(true);
  widgetId = widget.body.data.id;
  const agent = await api('POST', '/api/v1/agents', {
    body: { name: 'Front desk', agent_name: 'Ava', status: 'AGENT_STATUS_ACTIVE', widget_settings_id: widgetId, s2s_model: 'browser-call', begin_message: 'Hi, you are talking to Ava.', reminder_trigger_ms: 0 },
  });
  expect(agent.status).toBe(200);
  browser = await launchBrowser({ args: ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', '--autoplay-policy=no-user-gesture-required'] });
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await model?.close();
});
afterEach(() => expect(model.errors).toEqual([]));

async function visit(setup?: (tab: Page) => Promise<void>): Promise<Page> {
  const context = await browser.createBrowserContext();
  const tab = await context.newPage();
  await setup?.(tab);
  await tab.goto(`${site.url}/?widget=${widgetId}`);
  await (await tab.waitForSelector(`${W} .launcher`, { timeout: 10_000 }))!.click();
  return tab;
}

const stats = (tab: Page) => tab.evaluate(() => ({ ...window.VoiceAgentWidget?.call }));
const texts = (tab: Page) => tab.$$eval(`${W} .msg`, (els) => els.map((e: any) => e.textContent ?? ''));
const notice = (tab: Page) => tab.$eval(`${W} .notice`, (e: any) => (e.hidden ? '' : e.textContent ?? ''));

/** Root-mean-square of PCM16 little-endian audio. */
function rms(pcm: Buffer): number {
  let sum = 0;
  const n = pcm.length >> 1;
  for (let i = 0; i < n; i++) sum += pcm.readInt16LE(i * 2) ** 2;
  return Math.sqrt(sum / Math.max(1, n));
}

it('the call button: microphone audio reaches the model, the model\'s audio is played, the transcript shows as it happens, hang-up ends the call with its transcript', async () => {
  const greeting = pcm16Tone(0.3, 440);
  script = async (m) => {
    const update = await m.next('session.update');
    expect(update.session.audio.input.format).toEqual({ type: 'audio/pcm', rate: 24000 });
    await m.next('response.create');
    m.speak({ responseId: 'r1', itemId: 'i1', audio: greeting, transcript: 'Hi, you are talking to Ava.', chunkBytes: 4800 });
    // A second of the visitor's microphone (the fake device's beep; the greeting has played by then), then their words.
    await m.until(() => m.inputAudio().length >= 48_000, 'the microphone audio', 15_000);
    m.userSays('u1', 'Hello from Chromium.');
    await m.closed;
  };
  const tab = await visit();
  await (await tab.waitForSelector(`${W} .callbtn`, { timeout: 10_000 }))!.click();
  await tab.waitForFunction(() => window.VoiceAgentWidget?.call?.playedBytes >= 14_400, { timeout: 15_000 });
  await tab.waitForFunction((sel: string) => [...(document.querySelector(sel)?.shadowRoot?.querySelectorAll('.msg.user') ?? [])].some((e: any) => e.textContent === 'Hello from Chromium.'), { timeout: 15_000 }, HOST);
  const m = model.connections.at(-1)!;
  // The fake microphone's tone, not silence, reached the model.
  expect(rms(m.inputAudio())).toBeGreaterThan(100);
  expect((await stats(tab)).sentBytes).toBeGreaterThanOrEqual(48_000);
  expect(await texts(tab)).toEqual(expect.arrayContaining(['Hi, you are talking to Ava.', 'Hello from Chromium.']));
  expect(await tab.$eval(`${W} .callstate`, (e: any) => e.textContent)).toMatch(/Ava is speaking|You are speaking|Listening/);

  await (await tab.waitForSelector(`${W} .hangup`))!.click();
  await tab.waitForFunction(() => window.VoiceAgentWidget?.call?.state === 'ended', { timeout: 10_000 });
  expect((await stats(tab)).ended).toBe('client_hangup');
  expect(await texts(tab)).toContain('Call ended.');
  const calls = await until(() => api('GET', '/api/v1/calls?limit=10'), (r) => r.body.data.some((c: any) => c.channel === 'web' && c.status === 'ended'), 'the web call ending');
  const call = calls.body.data.find((c: any) => c.channel === 'web' && c.status === 'ended');
  expect(call).toMatchObject({ disconnection_reason: 'completed', metadata: { widget_id: widgetId }, from_phone_number: null });
  expect(call.transcript.map((t: any) => t.text)).toEqual(['Hi, you are talking to Ava.', 'Hello from Chromium.']);
  await tab.browserContext().close();
}, 90_000);

it('a refused microphone is explained, and no call is started', async () => {
  const before = (await api('GET', '/api/v1/calls?limit=1')).body.meta.total;
  const tab = await visit(async (t) => {
    await t.evaluateOnNewDocument(() => {
      navigator.mediaDevices.getUserMedia = () => Promise.reject(new DOMException('Permission denied', 'NotAllowedError'));
    });
  });
  await (await tab.waitForSelector(`${W} .callbtn`, { timeout: 10_000 }))!.click();
  await tab.waitForFunction((sel: string) => !document.querySelector(sel)?.shadowRoot?.querySelector('.notice')?.hidden, { timeout: 10_000 }, HOST);
  expect(await notice(tab)).toMatch(/microphone was not allowed.*allow the microphone for this site/);
  expect((await api('GET', '/api/v1/calls?limit=1')).body.meta.total).toBe(before);
  await tab.browserContext().close();
}, 60_000);

it('without a speech model the call fails at once, naming the setting', async () => {
  const saved = { base: process.env.REALTIME_BASE_URL, key: process.env.REALTIME_API_KEY };
  delete process.env.REALTIME_BASE_URL;
  delete process.env.REALTIME_API_KEY;
  local().expectFailures(/widget\/.*\/calls answered 503|503/);
  try {
    const tab = await visit();
    await (await tab.waitForSelector(`${W} .callbtn`, { timeout: 10_000 }))!.click();
    await tab.waitForFunction((sel: string) => !document.querySelector(sel)?.shadowRoot?.querySelector('.notice')?.hidden, { timeout: 10_000 }, HOST);
    expect(await notice(tab)).toMatch(/could not start: No speech model is configured: set REALTIME_API_KEY/);
    await tab.browserContext().close();
  } finally {
    process.env.REALTIME_BASE_URL = saved.base;
    process.env.REALTIME_API_KEY = saved.key;
  }
}, 60_000);

it('/demo shows the call button when a speech model is configured, and says what to set when it is not', async () => {
  const widgets = (await api('GET', '/api/v1/widget-settings?limit=100')).body.data;
  expect(widgets.find((w: any) => w.name === 'Demo widget')).toMatchObject({ voice_enabled: true });
  const withModel = await (await fetch(`${local().url}/demo`)).text();
  expect(withModel).toContain('press the phone icon');
  const saved = { base: process.env.REALTIME_BASE_URL, key: process.env.REALTIME_API_KEY };
  delete process.env.REALTIME_BASE_URL;
  delete process.env.REALTIME_API_KEY;
  try {
    const without = await (await fetch(`${local().url}/demo`)).text();
    expect(without).toContain('start the platform with a speech model, <code>REALTIME_API_KEY=sk-… npm start</code>');
    expect(without).toContain('<code>voice_enabled</code> must be true');
  } finally {
    process.env.REALTIME_BASE_URL = saved.base;
    process.env.REALTIME_API_KEY = saved.key;
  }
});

/**
 * The page's AudioContext as Firefox constrains it: at the device's rate (48 kHz here, whatever
 * the page asks), and a microphone source refused on a context of another rate (Firefox bug
 * 1674892: NotSupportedError). `refuseAll` refuses every microphone source (a browser that cannot
 * capture at all), for the failure path.
 */
function asFirefox(refuseAll = false) {
  return async (t: Page) => {
    await t.evaluateOnNewDocument((refuse: boolean) => {
      const Native = window.AudioContext;
      const DEVICE = 48_000;
      window.AudioContext = class extends Native {
        constructor(options?: any) {
          super({ ...(options ?? {}), sampleRate: DEVICE });
          window.__requestedRate = options?.sampleRate ?? null;
        }
        createMediaStreamSource(stream: any) {
          if (refuse || window.__requestedRate !== null) {
            throw new DOMException('Connecting AudioNodes from AudioContexts with different sample-rate is currently not supported.', 'NotSupportedError');
          }
          return super.createMediaStreamSource(stream);
        }
      };
    }, refuseAll);
  };
}

describe('as Firefox constrains the page', () => {
  it('calls with the AudioContext at 48 kHz: the microphone is resampled to 24 kHz and reaches the model, the agent is played', async () => {
    const greeting = pcm16Tone(0.3, 440);
    script = async (m) => {
      await m.next('session.update');
      await m.next('response.create');
      m.speak({ responseId: 'r1', itemId: 'i1', audio: greeting, transcript: 'Hello at any rate.', chunkBytes: 4800 });
      await m.until(() => m.inputAudio().length >= 48_000, 'the microphone audio', 15_000);
      // A noise heard as a word, then the turn transcribed as nothing: its live bubble goes.
      m.send({ type: 'conversation.item.input_audio_transcription.delta', item_id: 'u-noise', content_index: 0, delta: 'Hmm' });
      await heardNoise;
      m.userSays('u-noise', '');
      await m.closed;
    };
    let noiseShown!: () => void;
    const heardNoise = new Promise<void>((r) => (noiseShown = r));
    const tab = await visit(asFirefox());
    await (await tab.waitForSelector(`${W} .callbtn`, { timeout: 10_000 }))!.click();
    await tab.waitForFunction(() => window.VoiceAgentWidget?.call?.sentBytes >= 48_000 && window.VoiceAgentWidget?.call?.playedBytes >= 14_400, { timeout: 20_000 });
    // Transcript bubbles are keyed one way: the live one is dropped when its turn ends empty.
    await tab.waitForFunction((sel: string) => [...(document.querySelector(sel)?.shadowRoot?.querySelectorAll('.msg.user') ?? [])].some((e: any) => e.textContent === 'Hmm'), { timeout: 10_000 }, HOST);
    noiseShown();
    await tab.waitForFunction((sel: string) => ![...(document.querySelector(sel)?.shadowRoot?.querySelectorAll('.msg.user') ?? [])].some((e: any) => e.textContent === 'Hmm'), { timeout: 10_000 }, HOST);
    const s = await stats(tab);
    expect(s).toMatchObject({ state: 'live', contextRate: 48_000 });
    expect(await tab.evaluate(() => window.__requestedRate)).toBeNull();
    // A second of the fake microphone's tone at 24 kHz (48,000 bytes of PCM16), not silence.
    const m = model.connections.at(-1)!;
    expect(rms(m.inputAudio())).toBeGreaterThan(100);
    await (await tab.waitForSelector(`${W} .hangup`))!.click();
    await tab.waitForFunction(() => window.VoiceAgentWidget?.call?.state === 'ended', { timeout: 10_000 });
    expect((await stats(tab)).ended).toBe('client_hangup');
    await tab.browserContext().close();
  }, 90_000);

  it('a microphone the browser cannot use once the call is live is told in words, and the call is ended on the server', async () => {
    script = async (m) => {
      await m.closed;
    };
    const tab = await visit(asFirefox(true));
    await (await tab.waitForSelector(`${W} .callbtn`, { timeout: 10_000 }))!.click();
    await tab.waitForFunction(() => window.VoiceAgentWidget?.call?.state === 'ended', { timeout: 15_000 });
    expect(await notice(tab)).toMatch(/^The microphone could not be used in this browser, so the call was ended: .*sample-rate/);
    expect((await stats(tab)).ended).toBe('failed');
    // The call was admitted (live), then hung up by the page: ended on the server, none left open.
    await until(() => api('GET', '/api/v1/calls?limit=20'), (r) => r.body.data.filter((c: any) => c.channel === 'web').every((c: any) => !['ringing', 'in_progress'].includes(c.status)), 'every web call ended');
    expect(await tab.$eval(`${W} .callbtn`, (e: any) => e.hidden)).toBe(false);
    await tab.browserContext().close();
  }, 60_000);
});

it('a hang-up during "Connecting…" ends everything: the call the server made meanwhile is ended, none stays open, and the button works again', async () => {
  script = async (m) => {
    await m.closed;
  };
  const tab = await visit(async (t) => {
    // Holds the widget's POST …/calls until the test lets it go, so the hang-up lands during "Connecting…".
    await t.evaluateOnNewDocument(() => {
      const native = window.fetch.bind(window);
      window.__held = [];
      window.fetch = (input: any, init?: any) => {
        const url = String(input?.url ?? input);
        if (!/\/calls$/.test(url) || init?.method !== 'POST') return native(input, init);
        return new Promise((resolve, reject) => window.__held.push(() => native(input, init).then(resolve, reject)));
      };
    });
  });
  await (await tab.waitForSelector(`${W} .callbtn`, { timeout: 10_000 }))!.click();
  await tab.waitForFunction(() => window.__held.length === 1, { timeout: 10_000 });
  expect(await tab.$eval(`${W} .callstate`, (e: any) => e.textContent)).toBe('Connecting…');
  await (await tab.waitForSelector(`${W} .hangup`))!.click();
  expect((await stats(tab)).state).toBe('ended');
  const connections = model.connections.length;
  const before = new Set((await api('GET', '/api/v1/calls?limit=50')).body.data.map((c: any) => c.id));
  // Now the server makes the call: the page admits it and hangs up at once.
  await tab.evaluate(() => window.__held.shift()());
  const made = await until(
    () => api('GET', '/api/v1/calls?limit=50'),
    (r) => r.body.data.some((c: any) => !before.has(c.id) && c.channel === 'web' && c.status === 'ended'),
    'the call made after the hang-up ended',
  );
  expect(made.body.data.filter((c: any) => !before.has(c.id)).map((c: any) => ({ status: c.status, disconnection_reason: c.disconnection_reason, widget_id: c.metadata?.widget_id })))
    .toEqual([{ status: 'ended', disconnection_reason: 'completed', widget_id: widgetId }]);
  await Promise.all(model.connections.slice(connections).map((c) => c.closed));
  // The button works again: a new call starts.
  expect(await tab.$eval(`${W} .callbtn`, (e: any) => e.hidden)).toBe(false);
  await (await tab.waitForSelector(`${W} .callbtn`))!.click();
  await tab.waitForFunction(() => window.__held.length === 1, { timeout: 10_000 });
  expect((await stats(tab)).state).toBe('starting');
  await (await tab.waitForSelector(`${W} .hangup`))!.click();
  await tab.evaluate(() => window.__held.shift()());
  await tab.browserContext().close();
}, 60_000);

it('a hang-up while the browser asks for the microphone starts nothing: no call, the microphone let go, the button back', async () => {
  const before = (await api('GET', '/api/v1/calls?limit=1')).body.meta.total;
  const tab = await visit(async (t) => {
    // Holds the microphone prompt until the test answers it; counts the tracks stopped afterwards.
    await t.evaluateOnNewDocument(() => {
      const native = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
      window.__stopped = 0;
      navigator.mediaDevices.getUserMedia = (c: any) =>
        new Promise((resolve, reject) => {
          window.__grant = () =>
            native(c).then((stream: any) => {
              for (const track of stream.getTracks()) {
                const stop = track.stop.bind(track);
                track.stop = () => {
                  window.__stopped++;
                  stop();
                };
              }
              resolve(stream);
            }, reject);
        });
    });
  });
  await (await tab.waitForSelector(`${W} .callbtn`, { timeout: 10_000 }))!.click();
  await tab.waitForFunction(() => typeof window.__grant === 'function', { timeout: 10_000 });
  await (await tab.waitForSelector(`${W} .hangup`))!.click();
  expect((await stats(tab)).state).toBe('ended');
  await tab.evaluate(() => window.__grant());
  await tab.waitForFunction(() => window.__stopped > 0, { timeout: 10_000 });
  expect(await tab.$eval(`${W} .callbtn`, (e: any) => e.hidden)).toBe(false);
  // No POST …/calls went out: no call was made.
  expect((await api('GET', '/api/v1/calls?limit=1')).body.meta.total).toBe(before);
  await tab.browserContext().close();
}, 60_000);

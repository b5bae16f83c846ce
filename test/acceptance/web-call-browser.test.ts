/**
 * A web call from the widget in a real browser (Debian's headless chromium with its fake
 * microphone: --use-fake-ui-for-media-stream --use-fake-device-for-media-stream), against the
 * local runtime and a scripted Realtime stand-in: the widget's call button asks for the
 * microphone, starts the call, its microphone audio reaches the stand-in, the stand-in's audio is
 * played by the page, the transcript shows as it happens, and the hang-up button ends the call,
 * which keeps its transcript. A refused microphone and a platform without a speech model are told
 * in words.
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
    expect(without).toContain('start the platform with a speech model: <code>REALTIME_API_KEY=sk-… npm start</code>');
  } finally {
    process.env.REALTIME_BASE_URL = saved.base;
    process.env.REALTIME_API_KEY = saved.key;
  }
});

/**
 * The embeddable widget in a real browser (Debian's headless chromium through puppeteer-core),
 * against the local runtime: pages are served by a tiny site on 127.0.0.1 whose origin the widget
 * admits, and by a second one whose origin it does not. Covers what a visitor does (open, ask,
 * see the answer and its source link, reload), what a hostile page cannot do (restyle it), the
 * keyboard, an axe-core scan, a `function` tool answered by the page, readable 429 and 503, one
 * opening bubble, the launcher as a close button while open, full screen on a 375-pixel phone
 * with the field inside the visual viewport, and a chat that has ended or a widget deactivated
 * told as such (not "connection problem"), and a reply shown as it streams (a streaming stand-in
 * model holding the rest of its reply while the bubble already shows its first word), or whole
 * when the answer is not a stream.
 * UPDATE_SCREENSHOTS=1 writes docs/widget-desktop.png and docs/widget-phone.png.
 */
// The functions given to page.evaluate run in the browser; the project compiles without the DOM
// library, so the few browser names they use are declared loosely here.
declare const document: any;
declare const window: any;
declare const getComputedStyle: (el: unknown) => { getPropertyValue(name: string): string };
type Element = any;
type HTMLElement = any;
type HTMLInputElement = any;
type HTMLAnchorElement = any;
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'puppeteer-core';
import { installLlm, LlmError } from '../../shared/adapters/llm';
import { openAiModel } from '../../shared/adapters/llm/openai';
import { startOpenAiStandIn } from '../support/openai-stand-in';
import { installTimeSource } from '../../shared/clock';
import { launchBrowser } from '../support/browser';
import { usePlatform } from '../support/platform';
import { FAQ_HTML, setUpWidget, startSite, type WidgetSetup } from '../support/widget';

const local = usePlatform({ demo: true, env: { WIDGET_CHAT_MESSAGES_PER_MINUTE: '3', WIDGET_ADDRESS_CHATS_PER_MINUTE: '100' } });
const ROOT = join(__dirname, '..', '..');
const QUESTION = 'When does the store open on Saturdays?';
const HOST = '[data-voice-agent-widget]';
const W = `${HOST} >>>`;

let browser: Browser;
let allowed: Awaited<ReturnType<typeof startSite>>;
let other: Awaited<ReturnType<typeof startSite>>;
let widget: WidgetSetup;

/** A page embedding the widget; `hostile` adds a stylesheet that tries to restyle everything. */
function page(req: { url?: string }): string {
  const q = new URL(req.url ?? '/', 'http://x').searchParams;
  const hostile = q.has('hostile')
    ? '<style>* { all: unset !important; color: red !important; font-family: "Comic Sans MS", cursive !important; font-size: 30px !important; } button, div, input { border: 5px dashed lime !important; background: yellow !important; display: inline !important; padding: 20px !important; } :root { --x: 1 }</style>'
    : '';
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>Harbor Street</title>${hostile}
<script>window.toolCalls = []; window.VoiceAgentWidget = { onToolCall: async (call) => { window.toolCalls.push(call); return { total: '42.50 ' + (call.arguments.currency || 'USD') }; } };</script>
</head><body><main><h1>Harbor Street</h1><p><a href="#top">A link before the widget</a></p></main>
<script src="${local().url}/api/v1/widget/embed.js" data-widget-id="${q.get('widget')}" async></script></body></html>`;
}

beforeAll(async () => {
  const serve = (_: unknown, req: { url?: string }, res: { writeHead(s: number, h: Record<string, string>): void; end(b: string): void }) => {
    if (req.url === '/faq') {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(FAQ_HTML);
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(page(req));
  };
  allowed = await startSite((req, res) => serve(null, req, res));
  other = await startSite((req, res) => serve(null, req, res));
  widget = await setUpWidget(local(), { faqUrl: `${allowed.url}/faq`, allowedOrigins: [allowed.url], functionTool: 'cart_total' });
  browser = await launchBrowser();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await allowed?.close();
  await other?.close();
});

/** A fresh visitor (own sessionStorage) on the allowed site. */
async function visit(options: { hostile?: boolean; width?: number; height?: number; site?: string } = {}): Promise<{ context: BrowserContext; tab: Page; warnings: string[] }> {
  const context = await browser.createBrowserContext();
  const tab = await context.newPage();
  const warnings: string[] = [];
  tab.on('console', (m) => {
    if (m.type() === 'warn' || m.type() === 'error') warnings.push(m.text());
  });
  tab.on('pageerror', (e) => warnings.push(`pageerror: ${(e as Error).message}`));
  await tab.setViewport({ width: options.width ?? 1280, height: options.height ?? 800 });
  await tab.goto(`${options.site ?? allowed.url}/page?widget=${widget.widgetId}${options.hostile ? '&hostile=1' : ''}`);
  return { context, tab, warnings };
}

const launcher = (tab: Page) => tab.waitForSelector(`${W} .launcher`, { timeout: 10_000 });
const agentTexts = (tab: Page) => tab.$$eval(`${W} .msg.agent`, (els) => els.map((e) => e.textContent ?? ''));
const allTexts = (tab: Page) => tab.$$eval(`${W} .msg`, (els) => els.map((e) => e.textContent ?? ''));
const noticeText = (tab: Page) => tab.$eval(`${W} .notice`, (e) => ((e as HTMLElement).hidden ? '' : e.textContent ?? ''));
const focused = (tab: Page) => tab.evaluate((sel) => (document.querySelector(sel)?.shadowRoot?.activeElement as HTMLElement | null)?.className ?? `outside:${document.activeElement?.tagName}`, HOST);

/**
 * Waits for an agent bubble matching `pattern` and, unless `streaming`, for its turn to be over
 * (the log not `aria-busy`): a streamed reply shows its text before the turn has completed.
 */
async function waitForAgent(tab: Page, pattern: RegExp, options: { streaming?: boolean } = {}): Promise<void> {
  await tab.waitForFunction(
    (sel, source, streaming) => {
      const shadow = document.querySelector(sel)?.shadowRoot;
      const shown = [...(shadow?.querySelectorAll('.msg.agent') ?? [])].some((e) => new RegExp(source).test(e.textContent ?? ''));
      return shown && (streaming || shadow?.querySelector('[role=log]')?.getAttribute('aria-busy') !== 'true');
    },
    { timeout: 15_000 },
    HOST,
    pattern.source,
    !!options.streaming,
  );
}

async function ask(tab: Page, text: string): Promise<void> {
  await tab.type(`${W} .input`, text);
  await tab.keyboard.press('Enter');
}

async function openAndWait(tab: Page): Promise<void> {
  await (await launcher(tab))!.click();
  await waitForAgent(tab, /Ask me anything/);
}

const widgetChats = async () => (await local().api('GET', '/api/v1/chats?channel=widget&limit=100')).body.meta.total as number;

const shotDir = process.env.UPDATE_SCREENSHOTS ? join(ROOT, 'docs') : mkdtempSync(join(tmpdir(), 'widget-shots-'));

it('answers a question from the knowledge base with its source link, and keeps the chat across a reload', async () => {
  const { context, tab, warnings } = await visit();
  try {
    await openAndWait(tab);
    // One opening bubble: the agent's begin message (the widget's greeting only when there is none).
    expect(await allTexts(tab)).toEqual(['Hi, I am Ava. Ask me anything about the store.']);
    await ask(tab, QUESTION);
    await waitForAgent(tab, /10 am/);
    const links = await tab.$$eval(`${W} .msg.agent .src a`, (as) => as.map((a) => (a as HTMLAnchorElement).href));
    expect(links).toEqual([`${allowed.url}/faq`]);
    await tab.screenshot({ path: join(shotDir, 'widget-desktop.png') });
    expect(readFileSync(join(shotDir, 'widget-desktop.png')).subarray(1, 4).toString()).toBe('PNG');

    await tab.reload();
    await launcher(tab);
    await tab.waitForFunction((sel) => (document.querySelector(sel)?.shadowRoot?.querySelectorAll('.msg').length ?? 0) >= 3, { timeout: 10_000 }, HOST);
    const after = await allTexts(tab);
    expect(after).toHaveLength(3);
    expect(after[0]).toMatch(/Ask me anything/);
    expect(after[1]).toBe(QUESTION);
    expect(after[2]).toMatch(/10 am/);
    expect(warnings).toEqual([]);
  } finally {
    await context.close();
  }
});

it('draws nothing and creates no chat on a page whose origin the widget does not admit', async () => {
  const before = await widgetChats();
  const { context, tab, warnings } = await visit({ site: other.url });
  try {
    await tab.waitForFunction(() => true);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await tab.$(HOST)).toBeNull();
    expect(await widgetChats()).toBe(before);
    // One warning from the widget (plus the browser's own line about the refused request), never an exception.
    expect(warnings.some((w) => /voice-agent-widget/.test(w))).toBe(true);
    expect(warnings.filter((w) => w.startsWith('pageerror'))).toEqual([]);
  } finally {
    await context.close();
  }
});

it('looks the same under a hostile page stylesheet', async () => {
  const PROPS = ['display', 'position', 'width', 'height', 'color', 'background-color', 'font-family', 'font-size', 'border-top-style', 'padding-top', 'border-radius', 'bottom', 'right'];
  const measure = async (hostile: boolean) => {
    const { context, tab } = await visit({ hostile });
    try {
      await openAndWait(tab);
      return await tab.evaluate(
        (sel, props) => {
          const root = document.querySelector(sel)!;
          const pick = (el: Element | null) => (el ? Object.fromEntries(props.map((p) => [p, getComputedStyle(el).getPropertyValue(p)])) : null);
          const shadow = root.shadowRoot!;
          return {
            host: pick(root),
            launcher: pick(shadow.querySelector('.launcher')),
            panel: pick(shadow.querySelector('.panel')),
            title: pick(shadow.querySelector('.title')),
            message: pick(shadow.querySelector('.msg.agent')),
            input: pick(shadow.querySelector('.input')),
            send: pick(shadow.querySelector('.send')),
          };
        },
        HOST,
        PROPS,
      );
    } finally {
      await context.close();
    }
  };
  const clean = await measure(false);
  const attacked = await measure(true);
  expect(clean.launcher!.width).toBe('56px');
  expect(clean.title!['font-family']).not.toMatch(/Comic/);
  expect(attacked).toEqual(clean);
});

it('works with the keyboard alone: Tab to the launcher, open, type, Enter sends, Escape closes and returns focus', async () => {
  const { context, tab } = await visit();
  try {
    await launcher(tab);
    let tabs = 0;
    while ((await focused(tab)) !== 'launcher' && tabs++ < 10) await tab.keyboard.press('Tab');
    expect(await focused(tab)).toBe('launcher');
    await tab.keyboard.press('Enter');
    await waitForAgent(tab, /Ask me anything/);
    expect(await focused(tab)).toBe('input');
    await tab.keyboard.type(QUESTION);
    await tab.keyboard.press('Enter');
    await waitForAgent(tab, /10 am/);
    await tab.keyboard.press('Escape');
    expect(await tab.$eval(`${W} .panel`, (p) => (p as HTMLElement).hidden)).toBe(true);
    expect(await focused(tab)).toBe('launcher');
    expect(await tab.$eval(`${W} .launcher`, (b) => b.getAttribute('aria-expanded'))).toBe('false');
  } finally {
    await context.close();
  }
});

it('has no serious or critical accessibility violations (axe-core), open and closed', async () => {
  const { context, tab } = await visit();
  try {
    await launcher(tab);
    await tab.addScriptTag({ path: join(ROOT, 'node_modules', 'axe-core', 'axe.min.js') });
    const scan = () =>
      tab.evaluate(async (sel) => {
        const axe = (window as unknown as { axe: { run(ctx: unknown, opts: unknown): Promise<{ violations: { id: string; impact: string; nodes: unknown[] }[] }> } }).axe;
        const result = await axe.run({ include: [[sel]] }, { resultTypes: ['violations'] });
        return result.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length }));
      }, HOST);
    const closed = await scan();
    await openAndWait(tab);
    await ask(tab, QUESTION);
    await waitForAgent(tab, /10 am/);
    const open = await scan();
    const serious = [...closed, ...open].filter((v) => v.impact === 'serious' || v.impact === 'critical');
    expect(serious).toEqual([]);
    // The scan does see the widget: the dialog, the log and the labelled controls are there.
    expect(await tab.$eval(`${W} [role=dialog]`, (d) => d.getAttribute('aria-labelledby'))).toBe('vaw-title');
    expect(await tab.$eval(`${W} [role=log]`, (d) => d.getAttribute('aria-live'))).toBe('polite');
  } finally {
    await context.close();
  }
});

it('lets the page answer a function tool through window.VoiceAgentWidget.onToolCall', async () => {
  const { context, tab } = await visit();
  try {
    await openAndWait(tab);
    await ask(tab, 'What is my cart_total currency=EUR ?');
    await waitForAgent(tab, /cart_total tool answered/);
    const calls = await tab.evaluate(() => (window as unknown as { toolCalls: { name: string; arguments: Record<string, unknown> }[] }).toolCalls);
    expect(calls).toEqual([expect.objectContaining({ name: 'cart_total', arguments: { currency: 'EUR' } })]);
    expect((await agentTexts(tab)).at(-1)).toMatch(/42\.50 EUR/);
  } finally {
    await context.close();
  }
});

it('shows a 429 as a readable message with a way to try again', async () => {
  // The per-chat allowance is a fixed one-minute window: counted under a manual clock, inside one.
  installTimeSource({ now: () => Date.UTC(2031, 0, 1, 0, 0, 5) });
  const { context, tab, warnings } = await visit();
  try {
    await openAndWait(tab);
    for (let i = 1; i <= 3; i++) {
      await ask(tab, `${QUESTION} (${i})`);
      // The turn is over (a streamed reply shows its bubble before it is).
      await tab.waitForFunction((sel, n) => (document.querySelector(sel)?.shadowRoot?.querySelectorAll('.msg.agent').length ?? 0) >= 2 + n && document.querySelector(sel)?.shadowRoot?.querySelector('[role=log]')?.getAttribute('aria-busy') !== 'true', { timeout: 15_000 }, HOST, i - 1);
    }
    await ask(tab, 'One more question');
    await tab.waitForFunction((sel) => !(document.querySelector(sel)?.shadowRoot?.querySelector('.notice') as HTMLElement).hidden, { timeout: 10_000 }, HOST);
    expect(await noticeText(tab)).toMatch(/You are sending messages too quickly\. You can try again in \d+ seconds\.Try again/);
    // The message is not lost: it is back in the field, and not shown as sent.
    expect(await tab.$eval(`${W} .input`, (i) => (i as HTMLInputElement).value)).toBe('One more question');
    expect((await allTexts(tab)).includes('One more question')).toBe(false);
    expect(warnings.filter((w) => w.startsWith('pageerror'))).toEqual([]);
  } finally {
    installTimeSource(undefined);
    await context.close();
  }
}, 60_000);

it('shows a 503 as a readable message, and Try again sends the message once the model is back', async () => {
  const { context, tab } = await visit();
  try {
    await openAndWait(tab);
    installLlm({
      name: 'openai',
      complete: async () => {
        throw new LlmError('unreachable', 'connection refused', { provider: 'openai', retryAfterSeconds: 7 });
      },
    });
    await ask(tab, QUESTION);
    await tab.waitForFunction((sel) => !(document.querySelector(sel)?.shadowRoot?.querySelector('.notice') as HTMLElement).hidden, { timeout: 10_000 }, HOST);
    expect(await noticeText(tab)).toBe('The assistant is unavailable right now. Please try again in 7 seconds.Try again');
    installLlm(undefined);
    await tab.click(`${W} .notice .btn`);
    await waitForAgent(tab, /10 am/);
    expect(await noticeText(tab)).toBe('');
  } finally {
    installLlm(undefined);
    await context.close();
  }
});

it('goes full screen on a 375-pixel phone, keeps the field above the on-screen keyboard, and closes from its head', async () => {
  const { context, tab } = await visit({ width: 375, height: 740 });
  try {
    await openAndWait(tab);
    await ask(tab, QUESTION);
    await waitForAgent(tab, /10 am/);
    const boxes = () =>
      tab.evaluate((sel) => {
        const shadow = document.querySelector(sel)!.shadowRoot!;
        const r = (q: string) => {
          const b = shadow.querySelector(q).getBoundingClientRect();
          return { left: b.left, top: b.top, right: b.right, bottom: b.bottom };
        };
        return { panel: r('.panel'), input: r('.input'), radius: getComputedStyle(shadow.querySelector('.panel')).getPropertyValue('border-top-left-radius') };
      }, HOST);
    const full = await boxes();
    expect(full.panel).toEqual({ left: 0, top: 0, right: 375, bottom: 740 });
    expect(full.radius).toBe('0px');
    // Nothing of the widget covers the panel (the launcher's close role is the head's button here).
    expect(await tab.$eval(`${W} .launcher`, (b) => getComputedStyle(b).getPropertyValue('display'))).toBe('none');
    await tab.screenshot({ path: join(shotDir, 'widget-phone.png') });
    // The on-screen keyboard shrinks the visual viewport: the panel follows it, the field stays in sight.
    await tab.setViewport({ width: 375, height: 420 });
    await tab.waitForFunction((sel) => document.querySelector(sel)!.shadowRoot!.querySelector('.panel').getBoundingClientRect().bottom <= 420, { timeout: 5_000 }, HOST);
    const typing = await boxes();
    expect(typing.panel.top).toBe(0);
    expect(typing.input.bottom).toBeLessThanOrEqual(420);
    expect(typing.input.top).toBeGreaterThan(0);
    await tab.click(`${W} .head .icon`);
    expect(await tab.$eval(`${W} .panel`, (p) => (p as HTMLElement).hidden)).toBe(true);
  } finally {
    await context.close();
  }
});

it('turns the launcher into a close button while the chat is open', async () => {
  const { context, tab } = await visit();
  try {
    const button = (await launcher(tab))!;
    const state = () => tab.$eval(`${W} .launcher`, (b) => ({ label: b.getAttribute('aria-label'), expanded: b.getAttribute('aria-expanded'), icon: b.querySelector('path').getAttribute('d') }));
    const closed = await state();
    expect(closed).toMatchObject({ label: 'Open chat: Harbor Street', expanded: 'false' });
    await button.click();
    await waitForAgent(tab, /Ask me anything/);
    const opened = await state();
    expect(opened).toMatchObject({ label: 'Close chat: Harbor Street', expanded: 'true' });
    expect(opened.icon).not.toBe(closed.icon);
    // The same close icon as the panel's own close button.
    expect(opened.icon).toBe(await tab.$eval(`${W} .head .icon path`, (p) => p.getAttribute('d')));
    await button.click();
    expect(await tab.$eval(`${W} .panel`, (p) => (p as HTMLElement).hidden)).toBe(true);
    expect(await state()).toEqual(closed);
  } finally {
    await context.close();
  }
});

const notice = (tab: Page) => tab.waitForFunction((sel) => !(document.querySelector(sel)?.shadowRoot?.querySelector('.notice') as HTMLElement).hidden, { timeout: 10_000 }, HOST);

it('says that a chat has ended, and offers a new one', async () => {
  const { context, tab } = await visit();
  try {
    await openAndWait(tab);
    const saved = await tab.evaluate((id) => JSON.parse(window.sessionStorage.getItem(`voice-agent-widget:${id}`)), widget.widgetId);
    expect((await local().api('POST', `/api/v1/chats/${saved.id}/end`)).status).toBe(200);
    await ask(tab, QUESTION);
    await notice(tab);
    expect(await noticeText(tab)).toBe('This chat has ended.Start a new chat');
    await tab.click(`${W} .notice .btn`);
    await tab.waitForFunction((sel) => (document.querySelector(sel)?.shadowRoot?.querySelectorAll('.msg.agent').length ?? 0) === 1, { timeout: 10_000 }, HOST);
    expect(await allTexts(tab)).toEqual(['Hi, I am Ava. Ask me anything about the store.']);
  } finally {
    await context.close();
  }
});

it('says that the assistant is not available once its widget is deactivated, not "connection problem"', async () => {
  const { context, tab } = await visit();
  try {
    await openAndWait(tab);
    expect((await local().api('DELETE', `/api/v1/widget-settings/${widget.widgetId}`)).status).toBe(200);
    await ask(tab, QUESTION);
    await notice(tab);
    expect(await noticeText(tab)).toBe('This assistant is not available right now.');
    expect(await tab.$eval(`${W} .input`, (i) => (i as HTMLInputElement).disabled)).toBe(true);
  } finally {
    await local().api('PATCH', `/api/v1/widget-settings/${widget.widgetId}`, { body: { is_active: true } });
    await context.close();
  }
});

it('serves the local demo page, whose widget answers from the demo knowledge base', async () => {
  const demo = local().platform.demo!;
  expect(demo).toMatchObject({ url: `${local().url}/demo`, created: true });
  const context = await browser.createBrowserContext();
  try {
    const tab = await context.newPage();
    await tab.goto(demo.url);
    await (await launcher(tab))!.click();
    await waitForAgent(tab, /I am Robin/);
    await ask(tab, 'When do you open on Saturdays?');
    await waitForAgent(tab, /Saturdays and Sundays we open at 8 am/);
  } finally {
    await context.close();
  }
});

describe('a reply that streams', () => {
  const FULL = 'On Saturdays the store opens at 10 am.';
  const typingHidden = (tab: Page) => tab.$eval(`${W} .typing`, (e) => (e as HTMLElement).hidden);

  it('grows in the agent bubble as the model produces it: typing dots until the first word, the whole reply and its sources at the end', async () => {
    const model = await startOpenAiStandIn();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    model.script({ text: FULL, holdUntil: held });
    installLlm(openAiModel({ baseUrl: model.url, apiKey: async () => 'sk-test-standin', timeoutMs: 10_000 }));
    const { context, tab, warnings } = await visit();
    try {
      await openAndWait(tab);
      await ask(tab, QUESTION);
      // The model has sent its first word and holds the rest: the bubble already shows it.
      await waitForAgent(tab, /^On $/, { streaming: true });
      expect(await allTexts(tab)).toEqual(['Hi, I am Ava. Ask me anything about the store.', QUESTION, 'On ']);
      expect(await typingHidden(tab)).toBe(true);
      expect(await tab.$eval(`${W} .send`, (b) => (b as HTMLInputElement).disabled)).toBe(true);
      expect(await tab.$eval(`${W} [role=log]`, (l) => l.getAttribute('aria-busy'))).toBe('true');
      expect(model.requests.at(-1)!.body).toMatchObject({ stream: true });
      release();
      await waitForAgent(tab, /opens at 10 am\./);
      await tab.waitForFunction((sel) => !(document.querySelector(sel)?.shadowRoot?.querySelector('.send') as HTMLInputElement).disabled, { timeout: 10_000 }, HOST);
      expect(await allTexts(tab)).toEqual(['Hi, I am Ava. Ask me anything about the store.', QUESTION, expect.stringMatching(/^On Saturdays the store opens at 10 am\./)]);
      // The final bubble is the stored message's: its source link came with message.completed.
      expect(await tab.$$eval(`${W} .msg.agent .src a`, (as) => as.map((a) => (a as HTMLAnchorElement).href))).toEqual([`${allowed.url}/faq`]);
      expect(await typingHidden(tab)).toBe(true);
      // What was streamed is what was stored.
      await tab.reload();
      await launcher(tab);
      await tab.waitForFunction((sel) => (document.querySelector(sel)?.shadowRoot?.querySelectorAll('.msg').length ?? 0) >= 3, { timeout: 10_000 }, HOST);
      expect((await allTexts(tab))[2]).toMatch(/^On Saturdays the store opens at 10 am\./);
      expect(warnings).toEqual([]);
    } finally {
      release();
      installLlm(undefined);
      await context.close();
      await model.close();
    }
  });

  it('shows the plain answer when the response is not a stream', async () => {
    const { context, tab, warnings } = await visit();
    try {
      // A server (or a proxy) that does not stream: the request reaches it without text/event-stream.
      let asked = '';
      await tab.setRequestInterception(true);
      tab.on('request', (req) => {
        if (req.isInterceptResolutionHandled()) return;
        if (req.method() === 'POST' && /\/messages$/.test(req.url())) {
          asked = req.headers().accept ?? '';
          void req.continue({ headers: { ...req.headers(), accept: 'application/json' } });
        } else void req.continue();
      });
      await openAndWait(tab);
      await ask(tab, QUESTION);
      await waitForAgent(tab, /10 am/);
      expect(asked).toMatch(/text\/event-stream/);
      expect(await allTexts(tab)).toEqual(['Hi, I am Ava. Ask me anything about the store.', QUESTION, expect.stringMatching(/10 am/)]);
      expect(await tab.$$eval(`${W} .msg.agent .src a`, (as) => as.map((a) => (a as HTMLAnchorElement).href))).toEqual([`${allowed.url}/faq`]);
      expect(warnings).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

/**
 * Black-box, in a real browser: GET /api/v1/docs on the local runtime renders this API's
 * OpenAPI document with Redoc, draws every tag of it, and loads nothing but from the API itself.
 */
import type { Browser, Page } from 'puppeteer-core';
import { launchBrowser } from '../support/browser';
import { usePlatform } from '../support/platform';

// Functions passed to page.evaluate run in the browser; the project compiles without the DOM library.
declare const document: any;

const local = usePlatform();

describe('the API reference page (GET /api/v1/docs)', () => {
  let browser: Browser;
  let page: Page;
  /** Every URL the page asked for that is not on the API's own origin (refused). */
  const outside: string[] = [];
  const failedScripts: string[] = [];

  beforeAll(async () => {
    browser = await launchBrowser();
    page = await browser.newPage();
    const origin = new URL(local().url).origin;
    await page.setRequestInterception(true);
    page.on('request', (request) => {
      const url = request.url();
      if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === origin) void request.continue();
      else {
        outside.push(url);
        void request.abort();
      }
    });
    page.on('pageerror', (error) => void failedScripts.push(String(error)));
    // A fetch the page's Content-Security-Policy stopped never reaches the interception above.
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) failedScripts.push(message.text());
    });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('serves a small HTML page that loads Redoc\'s script from the API', async () => {
    const res = await local().api('GET', '/api/v1/docs', { key: null });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('<script src="/api/v1/docs/redoc.js"></script>');
    const script = await local().api('GET', '/api/v1/docs/redoc.js/', { key: null });
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(String(script.body)).toMatch(/Redoc/);
  });

  it('draws every tag of the document, in the menu and in the content, with nothing from the internet', async () => {
    const spec = (await local().api('GET', '/api/v1/openapi.json', { key: null })).body as { tags: { name: string }[]; paths: Record<string, unknown> };
    const tags = spec.tags.map((t) => t.name);
    expect(tags.length).toBeGreaterThan(5);

    await page.goto(`${local().url}/api/v1/docs`, { waitUntil: 'networkidle0', timeout: 60_000 });
    await page.waitForSelector('[data-section-id^="tag/"]', { timeout: 60_000 });
    const drawn = await page.evaluate(() => {
      // The page's DOM, typed just enough (the project compiles without the DOM library).
      interface Node { getAttribute(name: string): string | null; querySelector(selector: string): Node | null; querySelectorAll(selector: string): ArrayLike<Node>; textContent: string | null }
      const document = (globalThis as unknown as { document: Node }).document;
      const isTag = (id: string | null) => !!id && id.startsWith('tag/') && !id.includes('/operation/');
      return {
        // Each tag's section in the middle panel, by its heading; each tag's entry in the menu, by its label.
        sections: Array.from(document.querySelectorAll('[data-section-id]')).filter((e) => isTag(e.getAttribute('data-section-id'))).map((e) => e.querySelector('h1, h2')?.textContent?.trim() ?? ''),
        menu: Array.from(document.querySelectorAll('[data-item-id]')).filter((e) => isTag(e.getAttribute('data-item-id'))).map((e) => e.querySelector('label')?.textContent?.trim() ?? ''),
        title: document.querySelector('h1')?.textContent ?? '',
        operations: document.querySelectorAll('[data-section-id*="/operation/"]').length,
      };
    });
    const expected = [...tags].sort();
    expect([...new Set(drawn.sections)].sort()).toEqual(expected);
    expect([...new Set(drawn.menu)].sort()).toEqual(expected);
    expect(drawn.title).toContain('Voice AI Agent Platform API');
    const operationCount = Object.values(spec.paths).reduce<number>((n, item) => n + Object.keys(item as object).length, 0);
    expect(drawn.operations).toBe(operationCount);
    expect(outside).toEqual([]);
    expect(failedScripts).toEqual([]);
  }, 120_000);
});

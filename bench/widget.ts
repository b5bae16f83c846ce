import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { startPlatform } from '../shared/local/platform';
import { generateApiKey } from '../shared/domain/api-keys/secret';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { WIDGET_DIST } from '../widget/build';
import { launchBrowser } from '../test/support/browser';

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/**
 * (widget) The embeddable script's weight (minified, gzipped as served) and, in headless
 * chromium against the local runtime, the time from the script's arrival to the launcher drawn:
 * the script runs, fetches the public config, builds its shadow root (the widget marks
 * `voice-agent-widget:launcher` with the User Timing API). BENCH_WIDGET_RUNS pages (default 15),
 * each in a fresh browser context with the cache off.
 */
export async function widgetBenchmark(runs = Number(process.env.BENCH_WIDGET_RUNS ?? 15)): Promise<string> {
  // What the API serves: the committed build (a unit test keeps it equal to a fresh one).
  const code = readFileSync(join(__dirname, '..', WIDGET_DIST), 'utf8');
  const gz = gzipSync(code, { level: 9 }).length;
  const key = generateApiKey();
  const platform = await startPlatform({ port: 0, inMemory: true, apiKeys: [key], tickSeconds: 24 * 3600, env: { LOG_LEVEL: 'SILENT' }, log: () => undefined });
  const site = createServer((req, res) => {
    const id = new URL(req.url ?? '/', 'http://x').searchParams.get('widget');
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(`<!doctype html><html lang="en"><head><title>bench</title></head><body><h1>Page</h1><script src="${platform.url}/api/v1/widget/embed.js" data-widget-id="${id}" async></script></body></html>`);
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  const siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
  const browser = await launchBrowser();
  const afterLoad: number[] = [];
  const fromRequest: number[] = [];
  try {
    const call = async (method: string, path: string, body: unknown) => {
      const res = await fetch(`${platform.url}${path}`, { method, headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return ((await res.json()) as { data: { id: string } }).data;
    };
    const widget = await call('POST', '/api/v1/widget-settings', { name: 'Bench' });
    await call('POST', '/api/v1/agents', { name: 'Bench agent', widget_settings_id: widget.id, begin_message: 'Hi' });
    for (let i = 0; i < runs + 1; i++) {
      const context = await browser.createBrowserContext();
      const tab = await context.newPage();
      await tab.setCacheEnabled(false);
      await tab.goto(`${siteUrl}/?widget=${widget.id}`);
      await tab.waitForFunction(() => performance.getEntriesByName('voice-agent-widget:launcher').length > 0, { timeout: 10_000 });
      const t = await tab.evaluate(() => {
        const script = performance.getEntriesByType('resource').find((e) => e.name.includes('/widget/embed.js')) as unknown as { responseEnd: number; startTime: number };
        const mark = performance.getEntriesByName('voice-agent-widget:launcher')[0]!;
        return { afterLoad: mark.startTime - script.responseEnd, fromRequest: mark.startTime - script.startTime };
      });
      await context.close();
      if (i === 0) continue; // the first page warms the runtime's function up
      afterLoad.push(t.afterLoad);
      fromRequest.push(t.fromRequest);
    }
  } finally {
    await browser.close();
    await new Promise<void>((r) => site.close(() => r()));
    await platform.stop();
  }
  const f = (n: number) => `${n.toFixed(1)} ms`;
  return [
    '## (widget) The embeddable widget',
    '',
    `\`GET /api/v1/widget/embed.js\` (widget/, bundled by esbuild: one minified ES2020 IIFE, no dependencies): **${(code.length / 1024).toFixed(1)} KB** minified, **${(gz / 1024).toFixed(1)} KB gzipped** as served (budget 15 KB gzipped; a unit test holds it).`,
    '',
    `Headless chromium (Debian's), the local runtime on the same machine, ${runs} page loads in fresh contexts with the cache off:`,
    '',
    '| from | to | median | slowest |',
    '|---|---|---|---|',
    `| the script downloaded | the launcher drawn (the script runs, fetches the public config, builds its shadow root) | ${f(median(afterLoad))} | ${f(Math.max(...afterLoad))} |`,
    `| the script requested | the launcher drawn | ${f(median(fromRequest))} | ${f(Math.max(...fromRequest))} |`,
    '',
    'Most of the time after the download is the config request to the local runtime (a Lambda-shaped handler and a DynamoDB Local query); drawing itself is a few milliseconds. The hosted widgets of Vapi, Retell and ElevenLabs could not be weighed here (no network beyond the npm registry), so no comparison is claimed.',
    '',
  ].join('\n');
}

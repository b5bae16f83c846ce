/**
 * The local runtime's own pages (`npm start`): the demo widget admits only the runtime's own
 * origins, also when an earlier start made it for every origin, and the pages a browser shows
 * (`/demo`, `/api/v1/docs`) carry the platform's icon, which `/favicon.ico` serves too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { demoOrigins, demoOriginsUpdate } from '../../shared/local/demo';
import { startTestPlatform, expectNoUnexpected5xx, type TestPlatform } from '../support/platform';

const dataDir = mkdtempSync(join(tmpdir(), 'vap-local-demo-'));
let running: TestPlatform | undefined;

async function start(): Promise<TestPlatform> {
  running = await startTestPlatform({ inMemory: false, dataDir, demo: true, voice: false });
  return running;
}

async function stop(): Promise<void> {
  const platform = running;
  running = undefined;
  await platform?.stop();
  if (platform) expectNoUnexpected5xx(platform);
}

afterAll(async () => {
  await stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The public widget configuration as a page at `origin` asks for it. */
const configFrom = (local: TestPlatform, widgetId: string, origin: string) => local.api('GET', `/api/v1/widget/${widgetId}/config`, { key: null, headers: { origin } });

describe('the demo widget', () => {
  it("admits only the runtime's own origins, and a start brings an earlier demo's every-origin widget to them", async () => {
    // Prepare: a first start creates the demo; make it admit every origin, as demos made before did.
    let local = await start();
    const widgetId = local.platform.demo!.widgetId;
    const first = await local.api('GET', `/api/v1/widget-settings/${widgetId}`);
    expect(first.body.data.allowed_origins).toEqual(demoOrigins(local.url));
    expect((await configFrom(local, widgetId, 'https://elsewhere.example')).status).toBe(404);
    const own = await configFrom(local, widgetId, local.url);
    expect(own.status).toBe(200);
    expect(own.headers.get('access-control-allow-origin')).toBe(local.url);
    expect((await local.api('PATCH', `/api/v1/widget-settings/${widgetId}`, { body: { allowed_origins: [] } })).status).toBe(200);
    await stop();

    // Act: the next start (another port, as any start may get).
    local = await start();

    // Assess
    expect(local.platform.demo).toMatchObject({ widgetId, created: false, originsUpdated: true });
    const after = await local.api('GET', `/api/v1/widget-settings/${widgetId}`);
    expect(after.body.data.allowed_origins).toEqual(demoOrigins(local.url));
    expect(demoOrigins(local.url)).toEqual([local.url.replace('127.0.0.1', 'localhost'), local.url]);
    expect((await configFrom(local, widgetId, 'https://elsewhere.example')).status).toBe(404);
    expect((await configFrom(local, widgetId, local.url.replace('127.0.0.1', 'localhost'))).status).toBe(200);
  }, 180_000);

  it('keeps a list of origins that holds one of yours', () => {
    const own = demoOrigins('http://127.0.0.1:3100');
    expect(demoOriginsUpdate(['https://shop.example', 'http://localhost:3000'], own)).toBeUndefined();
    expect(demoOriginsUpdate(['http://localhost:3000', 'http://127.0.0.1:3000'], own)).toEqual(own);
    expect(demoOriginsUpdate(['*'], own)).toEqual(own);
    expect(demoOriginsUpdate([...own, 'https://shop.example'], own)).toBeUndefined();
  });
});

describe("the runtime's pages", () => {
  it('carry the platform icon, and /favicon.ico serves it', async () => {
    const local = running ?? (await start());
    for (const path of ['/demo', '/api/v1/docs']) {
      const page = await local.api('GET', path, { key: null });
      expect([path, page.status]).toEqual([path, 200]);
      expect(page.body).toMatch(/<link rel="icon" type="image\/svg\+xml" href="data:image\/svg\+xml,%3Csvg/);
    }
    const icon = await local.api('GET', '/favicon.ico', { key: null });
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(icon.body).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const head = await fetch(`${local.url}/favicon.ico`, { method: 'HEAD' });
    expect([head.status, await head.text()]).toEqual([200, '']);
  }, 120_000);
});

/**
 * Black-box: the widget's public endpoints on the local runtime, as a page's script calls them:
 * the script itself (ETag, 304, gzip), the origin rule and CORS on every call, chat tokens (401,
 * 404 for another chat's), bad input, the abuse limits counted per client address, per widget and
 * per chat (429 with Retry-After), and a deactivated widget closing its open chats at once.
 */
import { gunzipSync } from 'node:zlib';
import { request } from 'node:http';
import { usePlatform } from '../support/platform';
import { FAQ_HTML, send, setUpWidget, startSite, type WidgetSetup } from '../support/widget';

// Small limits so the tests reach them; the code's defaults are 60, 10 and 20.
const local = usePlatform({ env: { WIDGET_CHATS_PER_MINUTE: '6', WIDGET_ADDRESS_CHATS_PER_MINUTE: '4', WIDGET_CHAT_MESSAGES_PER_MINUTE: '3' } });
const PAGE = 'https://shop.example.com';
const OTHER = 'https://evil.example.net';

let site: Awaited<ReturnType<typeof startSite>>;
let main: WidgetSetup;
let limited: WidgetSetup;

beforeAll(async () => {
  site = await startSite((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(FAQ_HTML);
  });
  main = await setUpWidget(local(), { faqUrl: `${site.url}/faq`, allowedOrigins: [PAGE] });
  limited = await setUpWidget(local(), { faqUrl: `${site.url}/faq2`, allowedOrigins: [] });
}, 60_000);
afterAll(() => site.close());

const url = (path: string) => `${local().url}/api/v1${path}`;
const start = (widgetId: string, origin = PAGE, from?: string) => send(url(`/widget/${widgetId}/chats`), { method: 'POST', headers: { origin }, body: {}, from });
const bearer = (token: string) => ({ origin: PAGE, authorization: `Bearer ${token}` });

describe('the script', () => {
  it('is served as cacheable JavaScript with a strong ETag, 304 when current, gzip when accepted', async () => {
    const plain = await send(url('/widget/embed.js'));
    expect(plain.status).toBe(200);
    expect(plain.headers['content-type']).toMatch(/^text\/javascript/);
    expect(plain.headers['cache-control']).toMatch(/public, max-age=\d+/);
    const etag = String(plain.headers.etag);
    expect(etag).toMatch(/^"[^"]+"$/);
    expect(plain.body).toContain('data-widget-id');
    const again = await send(url('/widget/embed.js'), { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(again.body).toBe('');
    const stale = await send(url('/widget/embed.js'), { headers: { 'if-none-match': '"old"' } });
    expect(stale.status).toBe(200);
    const zipped = await new Promise<Buffer>((resolve, reject) => {
      request(url('/widget/embed.js'), { headers: { 'accept-encoding': 'gzip' } }, (res) => {
        expect(res.headers['content-encoding']).toBe('gzip');
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks)));
      }).on('error', reject).end();
    });
    expect(gunzipSync(zipped).toString('utf8')).toBe(plain.body);
    expect(zipped.length).toBeLessThanOrEqual(15 * 1024);
  });
});

describe('public chats', () => {
  it('fills the begin message placeholders that need no contact in the public config', async () => {
    const config = await send(url(`/widget/${main.widgetId}/config`), { headers: { origin: PAGE } });
    expect(config.status).toBe(200);
    expect(config.body.data.agent.begin_message).toBe('Hi, I am Ava. Ask me anything about the store.');
  });

  it('answers preflights for the chat paths under the origin rule', async () => {
    const chatId = '0190f0f0-0000-7000-8000-000000000000';
    for (const path of [`/widget/${main.widgetId}/chats`, `/widget/${main.widgetId}/chats/${chatId}`, `/widget/${main.widgetId}/chats/${chatId}/messages`, `/widget/${main.widgetId}/chats/${chatId}/tool-results`, `/widget/${main.widgetId}/chats/${chatId}/end`]) {
      const ok = await send(url(path), { method: 'OPTIONS', headers: { origin: PAGE, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' } });
      expect([path, ok.status]).toEqual([path, 200]);
      expect(ok.headers['access-control-allow-origin']).toBe(PAGE);
      expect(ok.headers['access-control-allow-headers']).toMatch(/authorization/);
      const refused = await send(url(path), { method: 'OPTIONS', headers: { origin: OTHER } });
      expect(refused.status).toBe(404);
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('starts a chat with the widget\'s agent, answers from the knowledge base, and ends it', async () => {
    const started = await start(main.widgetId);
    expect(started.status).toBe(200);
    expect(started.headers['access-control-allow-origin']).toBe(PAGE);
    const chat = started.body.data;
    expect(chat).toMatchObject({ widget_id: main.widgetId, agent_id: main.agentId, status: 'active' });
    expect(chat.messages).toEqual([expect.objectContaining({ role: 'agent', content: 'Hi, I am Ava. Ask me anything about the store.' })]);
    expect(typeof chat.token).toBe('string');
    expect(Date.parse(chat.token_expires_at) - Date.now()).toBeGreaterThan(23.9 * 3600_000);
    expect(chat).not.toHaveProperty('organization_id');

    const turn = await send(url(`/widget/${main.widgetId}/chats/${chat.id}/messages`), { method: 'POST', headers: bearer(chat.token), body: { content: 'When does the store open on Saturdays?' } });
    expect(turn.status).toBe(200);
    const answer = turn.body.data.messages.find((m: { role: string }) => m.role === 'agent');
    expect(answer.content).toMatch(/10 am/);
    expect(answer.sources[0].url).toBe(`${site.url}/faq`);

    const read = await send(url(`/widget/${main.widgetId}/chats/${chat.id}`), { headers: bearer(chat.token) });
    expect(read.status).toBe(200);
    expect(read.body.data.messages.map((m: { role: string }) => m.role)).toEqual(['agent', 'user', 'agent']);

    // The organization sees it as a widget chat.
    const own = await local().api('GET', `/api/v1/chats/${chat.id}`);
    expect(own.body.data).toMatchObject({ channel: 'widget', widget_id: main.widgetId });

    const ended = await send(url(`/widget/${main.widgetId}/chats/${chat.id}/end`), { method: 'POST', headers: bearer(chat.token) });
    expect(ended.status).toBe(200);
    expect(ended.body.data).toMatchObject({ status: 'ended', end_reason: 'user_ended' });
  });

  it('refuses another origin with a 404 and no CORS headers, and creates no chat', async () => {
    const before = await local().api('GET', '/api/v1/chats?channel=widget');
    const refused = await start(main.widgetId, OTHER);
    expect(refused.status).toBe(404);
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    const after = await local().api('GET', '/api/v1/chats?channel=widget');
    expect(after.body.meta.total).toBe(before.body.meta.total);
  });

  it('needs the chat\'s own token: 401 missing or forged, 404 for another chat\'s, readable by the page', async () => {
    const a = (await start(main.widgetId)).body.data;
    const b = (await start(main.widgetId)).body.data;
    const path = `/widget/${main.widgetId}/chats/${a.id}`;
    const missing = await send(url(path), { headers: { origin: PAGE } });
    expect(missing.status).toBe(401);
    expect(missing.headers['access-control-allow-origin']).toBe(PAGE);
    const forged = await send(url(path), { headers: bearer(`${a.token.split('.')[0]}.${Buffer.from('forged').toString('base64url')}`) });
    expect(forged.status).toBe(401);
    const other = await send(url(path), { headers: bearer(b.token) });
    expect(other.status).toBe(404);
    const otherMessage = await send(url(`${path}/messages`), { method: 'POST', headers: bearer(b.token), body: { content: 'hi' } });
    expect(otherMessage.status).toBe(404);
    // The token of a chat under another widget's path opens nothing either.
    const elsewhere = await send(url(`/widget/${limited.widgetId}/chats/${a.id}`), { headers: { authorization: `Bearer ${a.token}` } });
    expect(elsewhere.status).toBe(404);
    const wrongOrigin = await send(url(path), { headers: { origin: OTHER, authorization: `Bearer ${a.token}` } });
    expect(wrongOrigin.status).toBe(404);
    expect(wrongOrigin.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('rejects empty and oversized messages with a 400 naming the field', async () => {
    const chat = (await start(main.widgetId)).body.data;
    for (const content of ['', '   ', 'x'.repeat(4001)]) {
      const res = await send(url(`/widget/${main.widgetId}/chats/${chat.id}/messages`), { method: 'POST', headers: bearer(chat.token), body: { content } });
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields[0].path).toBe('content');
    }
    const noAgent = await send(url(`/widget/${main.widgetId}/chats`), { method: 'POST', headers: { origin: PAGE }, body: { agent_id: '0190f0f0-0000-7000-8000-000000000000' } });
    expect(noAgent.status).toBe(400);
    expect(noAgent.body.error.details.fields[0].path).toBe('agent_id');
  });
});

describe('abuse limits', () => {
  beforeAll(async () => {
    // Fixed one-minute windows: start the counting well inside one.
    const into = Date.now() % 60_000;
    if (into > 45_000) await new Promise((r) => setTimeout(r, 60_500 - into));
  }, 20_000);

  it('limits new chats per client address, then per widget, and messages per chat (429 with Retry-After)', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await start(limited.widgetId, PAGE, '127.0.0.1')).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    const refused = await start(limited.widgetId, PAGE, '127.0.0.1');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect(refused.headers['access-control-allow-origin']).toBe(PAGE);
    expect(refused.headers['access-control-expose-headers']).toMatch(/retry-after/);
    // Another address has its own allowance, until the widget's (6 a minute) is spent.
    const second: number[] = [];
    for (let i = 0; i < 3; i++) second.push((await start(limited.widgetId, PAGE, '127.0.0.2')).status);
    expect(second).toEqual([200, 200, 429]);

    const chat = (await start(main.widgetId, PAGE, '127.0.0.3')).body.data;
    const sent: number[] = [];
    for (let i = 0; i < 4; i++) {
      sent.push((await send(url(`/widget/${main.widgetId}/chats/${chat.id}/messages`), { method: 'POST', headers: bearer(chat.token), body: { content: `question ${i}` } })).status);
    }
    expect(sent).toEqual([200, 200, 200, 429]);
  });
});

describe('deactivation', () => {
  it('closes the widget at once: config, new chats and chats already open answer 404', async () => {
    const chat = (await start(main.widgetId, PAGE, '127.0.0.4')).body.data;
    const off = await local().api('DELETE', `/api/v1/widget-settings/${main.widgetId}`);
    expect(off.status).toBe(200);
    expect((await send(url(`/widget/${main.widgetId}/chats/${chat.id}`), { headers: bearer(chat.token) })).status).toBe(404);
    expect((await send(url(`/widget/${main.widgetId}/chats/${chat.id}/messages`), { method: 'POST', headers: bearer(chat.token), body: { content: 'hello' } })).status).toBe(404);
    expect((await start(main.widgetId, PAGE, '127.0.0.4')).status).toBe(404);
    expect((await send(url(`/widget/${main.widgetId}/config`), { headers: { origin: PAGE } })).status).toBe(404);
  });
});

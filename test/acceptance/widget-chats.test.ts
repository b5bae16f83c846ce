/**
 * Black-box: the widget's public endpoints on the local runtime, as a page's script calls them:
 * the script itself (ETag, 304, gzip, HEAD), the origin rule and CORS on every call (a POST
 * without `Origin` refused), chat tokens (401, 404 for another chat's), bad input, visitor
 * variables (only the widget's `public_variables`, never `metadata`, apart from the business's
 * variables at a signed webhook receiver), the abuse limits counted per client address, per
 * widget and per chat, tool results included (429 with Retry-After), the daily message budget
 * under a manual clock, and a deactivated widget closing its open chats at once with a refusal
 * the page can read.
 */
import { gunzipSync } from 'node:zlib';
import { request } from 'node:http';
import { Webhook } from 'standardwebhooks';
import { installTimeSource } from '../../shared/clock';
import { WIDGET_LIMIT_DEFAULTS } from '../../shared/domain/widgets/abuse-limits';
import { usePlatform } from '../support/platform';
import { FAQ_HTML, send, setUpWidget, startSite, type WidgetSetup } from '../support/widget';

// Small limits so the tests reach them; the code's defaults are WIDGET_LIMIT_DEFAULTS (600, 10 and 20).
const local = usePlatform({ env: { WIDGET_CHATS_PER_MINUTE: '6', WIDGET_ADDRESS_CHATS_PER_MINUTE: '4', WIDGET_CHAT_MESSAGES_PER_MINUTE: '3' } });
const PAGE = 'https://shop.example.com';
const OTHER = 'https://evil.example.net';

let site: Awaited<ReturnType<typeof startSite>>;
let main: WidgetSetup;
let limited: WidgetSetup;
let toolSecret = '';
const hooks: { headers: Record<string, string>; body: string }[] = [];

beforeAll(async () => {
  site = await startSite((req, res) => {
    if (req.url === '/orders') {
      const parts: Buffer[] = [];
      req.on('data', (c: Buffer) => parts.push(c));
      req.on('end', () => {
        hooks.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(parts).toString('utf8') });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ status: 'shipped' }));
      });
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(FAQ_HTML);
  });
  main = await setUpWidget(local(), { faqUrl: `${site.url}/faq`, allowedOrigins: [PAGE], functionTool: 'cart_total' });
  limited = await setUpWidget(local(), { faqUrl: `${site.url}/faq2`, allowedOrigins: [] });
}, 60_000);
afterAll(() => site.close());
afterEach(() => installTimeSource(undefined));

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

  it('answers HEAD with the headers of GET and no body', async () => {
    const got = await send(url('/widget/embed.js'));
    const head = await send(url('/widget/embed.js'), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.body).toBe('');
    expect(head.headers['content-type']).toMatch(/^text\/javascript/);
    expect(head.headers.etag).toBe(got.headers.etag);
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(got.body)));
    expect(head.headers['cache-control']).toBe(got.headers['cache-control']);
    expect((await send(url('/widget/embed.js'), { method: 'HEAD', headers: { 'if-none-match': String(got.headers.etag) } })).status).toBe(304);
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

  it('refuses a POST without Origin like an origin that is not allowed, on a widget open to every origin too', async () => {
    const before = await local().api('GET', '/api/v1/chats?channel=widget');
    for (const widgetId of [main.widgetId, limited.widgetId]) {
      const refused = await send(url(`/widget/${widgetId}/chats`), { method: 'POST', body: {}, from: '127.0.0.9' });
      expect(refused.status).toBe(404);
      expect(refused.body.error.message).toMatch(/Origin/);
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    }
    expect((await local().api('GET', '/api/v1/chats?channel=widget')).body.meta.total).toBe(before.body.meta.total);
    // A chat's own POSTs too, with a valid token: a script off any page cannot drive the chat.
    const chat = (await start(main.widgetId, PAGE, '127.0.0.9')).body.data;
    for (const [path, body] of [['messages', { content: 'hello' }], ['tool-results', { results: [{ tool_call_id: 'call_1', output: 1 }] }], ['end', undefined]] as const) {
      const res = await send(url(`/widget/${main.widgetId}/chats/${chat.id}/${path}`), { method: 'POST', headers: { authorization: `Bearer ${chat.token}` }, body });
      expect([path, res.status]).toEqual([path, 404]);
    }
    const read = await local().api('GET', `/api/v1/chats/${chat.id}`);
    expect(read.body.data).toMatchObject({ status: 'active', user_messages: 0 });
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

describe('visitor variables', () => {
  let visitor: WidgetSetup;
  beforeAll(async () => {
    const tool = await local().api('POST', '/api/v1/tools', {
      body: { name: 'Order status', type: 'webhook', url: `${site.url}/orders`, definition: { name: 'order_status', description: 'Status of an order', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } } },
    });
    expect(tool.status).toBe(200);
    toolSecret = tool.body.data.secret;
    visitor = await setUpWidget(local(), {
      faqUrl: `${site.url}/faq4`, allowedOrigins: [PAGE], widget: { public_variables: ['plan', 'page'] }, toolIds: [tool.body.data.id],
      agent: { begin_message: 'Hi {{plan}} member, I am {{agent_name}}.' },
    });
  }, 60_000);

  it('refuses built-in names in public_variables on the settings write, naming the field', async () => {
    const defaults = await local().api('POST', '/api/v1/widget-settings', { body: { name: 'Defaults' } });
    expect(defaults.body.data).toMatchObject({ public_variables: [], daily_message_limit: 2000 });
    for (const names of [['agent_name'], ['current_time'], ['current_time_local'], ['timezone'], ['plan', 'contact.first_name']]) {
      const res = await local().api('POST', '/api/v1/widget-settings', { body: { name: 'W', public_variables: names } });
      expect(res.status).toBe(400);
      expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual([`public_variables.${names.length - 1}`]);
    }
    const patched = await local().api('PATCH', `/api/v1/widget-settings/${defaults.body.data.id}`, { body: { public_variables: ['contact.metadata.vip'] } });
    expect(patched.status).toBe(400);
    expect(patched.body.error.details.fields[0].path).toBe('public_variables.0');
    const tooMany = await local().api('PATCH', `/api/v1/widget-settings/${defaults.body.data.id}`, { body: { public_variables: Array.from({ length: 21 }, (_, i) => `v${i}`) } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error.details.fields[0].path).toBe('public_variables');
    for (const limit of [-1, 1.5, 'many']) {
      const bad = await local().api('PATCH', `/api/v1/widget-settings/${defaults.body.data.id}`, { body: { daily_message_limit: limit } });
      expect([limit, bad.status, bad.body.error.details.fields[0].path]).toEqual([limit, 400, 'daily_message_limit']);
    }
  });

  it('takes only the listed names from a visitor, never metadata', async () => {
    const startWith = (body: unknown) => send(url(`/widget/${visitor.widgetId}/chats`), { method: 'POST', headers: { origin: PAGE }, body, from: '127.0.0.7' });
    const builtIn = await startWith({ dynamic_variables: { plan: 'gold', agent_name: 'Mallory', 'contact.first_name': 'Eve' } });
    expect(builtIn.status).toBe(400);
    expect(builtIn.body.error.details.fields.map((f: { path: string }) => f.path)).toEqual(['dynamic_variables.agent_name', 'dynamic_variables.contact.first_name']);
    expect(builtIn.headers['access-control-allow-origin']).toBe(PAGE);
    const metadata = await startWith({ metadata: { admin: true } });
    expect(metadata.status).toBe(400);
    expect(metadata.body.error.details.fields[0].path).toBe('metadata');
    // A widget that lists nothing takes no variable at all.
    const none = await send(url(`/widget/${main.widgetId}/chats`), { method: 'POST', headers: { origin: PAGE }, body: { dynamic_variables: { plan: 'gold' } }, from: '127.0.0.7' });
    expect(none.status).toBe(400);
    expect(none.body.error.details.fields[0].path).toBe('dynamic_variables.plan');
  });

  it('fills placeholders with the visitor\'s values and hands them to webhook tools apart, as conversation.visitor_variables', async () => {
    const started = await send(url(`/widget/${visitor.widgetId}/chats`), { method: 'POST', headers: { origin: PAGE }, body: { dynamic_variables: { plan: 'gold' } }, from: '127.0.0.8' });
    expect(started.status).toBe(200);
    const chat = started.body.data;
    expect(chat.messages[0].content).toBe('Hi gold member, I am Ava.');
    const turn = await send(url(`/widget/${visitor.widgetId}/chats/${chat.id}/messages`), { method: 'POST', headers: bearer(chat.token), body: { content: 'Please run order_status order_id=A7' } });
    expect(turn.status).toBe(200);
    const hook = hooks.at(-1)!;
    const verified = new Webhook(toolSecret).verify(hook.body, hook.headers) as Record<string, any>;
    expect(verified.conversation).toMatchObject({ type: 'chat', id: chat.id, dynamic_variables: {}, visitor_variables: { plan: 'gold' }, metadata: {} });
    // The organization's own view: the business's dynamic_variables stay empty.
    const own = await local().api('GET', `/api/v1/chats/${chat.id}`);
    expect(own.body.data).toMatchObject({ dynamic_variables: {}, metadata: {} });
  });
});

describe('abuse limits', () => {
  it('keeps the per-widget chat allowance far above one address\'s, so a few addresses cannot empty it', () => {
    expect(WIDGET_LIMIT_DEFAULTS.chatsPerWidget).toBeGreaterThanOrEqual(50 * WIDGET_LIMIT_DEFAULTS.chatsPerAddress);
  });

  it('limits new chats per client address, then per widget, and messages per chat (429 with Retry-After)', async () => {
    // Fixed one-minute windows, counted under a manual clock: 10 s into a minute of the future.
    const now = Date.UTC(2031, 4, 6, 10, 0, 10);
    installTimeSource({ now: () => now });
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

  it('counts tool results toward the chat\'s limit: each is a turn of the model', async () => {
    const now = Date.UTC(2031, 4, 6, 11, 0, 10);
    installTimeSource({ now: () => now });
    const chat = (await start(main.widgetId, PAGE, '127.0.0.5')).body.data;
    const path = (p: string) => url(`/widget/${main.widgetId}/chats/${chat.id}/${p}`);
    const asked = await send(path('messages'), { method: 'POST', headers: bearer(chat.token), body: { content: 'What is my cart_total currency=EUR' } });
    expect(asked.body.data.chat.status).toBe('requires_action');
    const answer = (turn: typeof asked) => ({ results: turn.body.data.chat.pending_tool_calls.map((c: { id: string }) => ({ tool_call_id: c.id, output: { total: 12 } })) });
    const first = await send(path('tool-results'), { method: 'POST', headers: bearer(chat.token), body: answer(asked) });
    expect(first.status).toBe(200);
    const again = await send(path('messages'), { method: 'POST', headers: bearer(chat.token), body: { content: 'And the cart_total currency=USD' } });
    expect(again.body.data.chat.status).toBe('requires_action');
    // The chat's fourth turn in the minute (limit 3): refused, the tool call still pending.
    const refused = await send(path('tool-results'), { method: 'POST', headers: bearer(chat.token), body: answer(again) });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBe(50);
    expect(refused.headers['access-control-allow-origin']).toBe(PAGE);
    expect((await send(url(`/widget/${main.widgetId}/chats/${chat.id}`), { headers: bearer(chat.token) })).body.data.status).toBe('requires_action');
  });

  it('stops a widget at its daily_message_limit until the next UTC day (429 with Retry-After), then takes messages again', async () => {
    const daily = await setUpWidget(local(), { faqUrl: `${site.url}/faq3`, allowedOrigins: [PAGE], widget: { daily_message_limit: 2 } });
    expect((await local().api('GET', `/api/v1/widget-settings/${daily.widgetId}`)).body.data.daily_message_limit).toBe(2);
    let now = Date.UTC(2031, 4, 7, 23, 58, 0);
    installTimeSource({ now: () => now });
    const a = (await start(daily.widgetId, PAGE, '127.0.0.6')).body.data;
    const b = (await start(daily.widgetId, PAGE, '127.0.0.6')).body.data;
    const ask = (chat: { id: string; token: string }, content: string) =>
      send(url(`/widget/${daily.widgetId}/chats/${chat.id}/messages`), { method: 'POST', headers: bearer(chat.token), body: { content } });
    expect((await ask(a, 'When does the store open?')).status).toBe(200);
    expect((await ask(b, 'Is parking free?')).status).toBe(200);
    // The widget's budget, not the chat's: the next message of either chat is refused until 00:00 UTC (120 s away).
    const refused = await ask(a, 'And on Saturdays?');
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('120');
    expect(refused.body.error.details).toMatchObject({ limit: 'daily_message_limit', retry_after_seconds: 120 });
    expect(refused.headers['access-control-allow-origin']).toBe(PAGE);
    now = Date.UTC(2031, 4, 7, 23, 59, 59);
    const last = await ask(b, 'And on Saturdays?');
    expect([last.status, last.headers['retry-after']]).toEqual([429, '1']);
    now = Date.UTC(2031, 4, 8, 0, 0, 0);
    expect((await ask(a, 'And on Saturdays?')).status).toBe(200);
    // 0 is no daily limit.
    const off = await local().api('PATCH', `/api/v1/widget-settings/${daily.widgetId}`, { body: { daily_message_limit: 0 } });
    expect(off.body.data.daily_message_limit).toBe(0);
    for (let i = 0; i < 3; i++) {
      now += 61_000;
      expect((await ask(b, `Question ${i}`)).status).toBe(200);
    }
  });
});

describe('deactivation', () => {
  it('closes the widget at once: config, new chats and chats already open answer 404, readable by an allowed page', async () => {
    const chat = (await start(main.widgetId, PAGE, '127.0.0.4')).body.data;
    const off = await local().api('DELETE', `/api/v1/widget-settings/${main.widgetId}`);
    expect(off.status).toBe(200);
    const refusals = [
      await send(url(`/widget/${main.widgetId}/chats/${chat.id}`), { headers: bearer(chat.token) }),
      await send(url(`/widget/${main.widgetId}/chats/${chat.id}/messages`), { method: 'POST', headers: bearer(chat.token), body: { content: 'hello' } }),
      await start(main.widgetId, PAGE, '127.0.0.4'),
      await send(url(`/widget/${main.widgetId}/config`), { headers: { origin: PAGE } }),
    ];
    for (const refused of refusals) {
      expect(refused.status).toBe(404);
      // The page can read why (the widget says the assistant is not available, not "connection problem").
      expect(refused.headers['access-control-allow-origin']).toBe(PAGE);
      expect(refused.body.error.details.reason).toBe('widget_inactive');
    }
    // The preflight still answers the allowed page, so its POST goes and gets that readable 404.
    const preflight = await send(url(`/widget/${main.widgetId}/chats/${chat.id}/messages`), { method: 'OPTIONS', headers: { origin: PAGE, 'access-control-request-method': 'POST' } });
    expect(preflight.status).toBe(200);
    expect(preflight.headers['access-control-allow-origin']).toBe(PAGE);
    // Another origin learns nothing.
    const other = await send(url(`/widget/${main.widgetId}/chats`), { method: 'POST', headers: { origin: OTHER }, body: {} });
    expect(other.status).toBe(404);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();
    expect(other.body.error.details.reason).toBeUndefined();
  });
});

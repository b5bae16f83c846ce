/**
 * The local runtime's demo page (`GET /demo`, never deployed): the web widget of the local
 * organization on a page of its own. On first start the runtime creates, through its own API,
 * a knowledge base with one document, a widget ("Demo widget") and an agent tied to both; later
 * starts find the widget by name and leave whatever you changed alone (README, "Put the agent
 * on your website"), except its `allowed_origins` (see `demoOrigins`).
 */
import { FAVICON_LINK } from '../domain/health/favicon';

export const DEMO_WIDGET_NAME = 'Demo widget';

const DEMO_DOCUMENT = [
  'Harbor Street Coffee is a small coffee shop and bakery at 12 Harbor Street.',
  'We open at 7 am and close at 6 pm on weekdays. On Saturdays and Sundays we open at 8 am and close at 4 pm.',
  'Our coffee beans are roasted every Tuesday. A bag of house blend costs 14 dollars.',
  'We bake croissants, cinnamon buns and sourdough bread every morning. Gluten-free muffins are available on Fridays.',
  'Wi-Fi is free for customers. Dogs are welcome on the terrace.',
].join('\n\n');

export interface Demo {
  widgetId: string;
  agentId?: string;
  knowledgeBaseId?: string;
  created: boolean;
  /** True when this start changed the widget's `allowed_origins` (an earlier start's "every origin", another port). */
  originsUpdated?: boolean;
}

/**
 * The origins the demo page is served from: the runtime's own address and, for a loopback one,
 * its other spelling (`localhost` and `127.0.0.1`, which browsers treat as two origins). The demo
 * widget admits these only: a widget that admits every origin is a public endpoint any site
 * could use with this organization's agent and budget.
 */
export function demoOrigins(baseUrl: string): string[] {
  const url = new URL(baseUrl);
  const port = url.port ? `:${url.port}` : '';
  const loopback = url.hostname === 'localhost' || url.hostname === '127.0.0.1';
  return loopback ? [`${url.protocol}//localhost${port}`, `${url.protocol}//127.0.0.1${port}`] : [url.origin];
}

/** An origin of a local runtime (any port): the only kind an earlier start wrote, so it may be replaced. */
const RUNTIME_ORIGIN = /^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/;

/**
 * What the demo widget's `allowed_origins` must become on this start, or undefined to leave them:
 * "every origin" (`[]`, or `*`), as the demo was created before, and origins of a runtime on
 * another port are replaced by this runtime's own; a list with any other origin is yours and kept.
 */
export function demoOriginsUpdate(current: string[] | undefined, own: string[]): string[] | undefined {
  const list = current ?? [];
  if (own.every((o) => list.includes(o))) return undefined;
  const ours = list.length === 0 || list.every((o) => o === '*' || RUNTIME_ORIGIN.test(o));
  return ours ? own : undefined;
}

async function call(baseUrl: string, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${baseUrl}/api/v1${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { data?: unknown; error?: { message?: string } };
  if (!res.ok) throw new Error(`demo set-up: ${method} ${path} answered ${res.status}: ${json.error?.message ?? ''}`);
  return json.data;
}

/**
 * The demo widget of the key's organization, created with its agent and knowledge base when there
 * is none; it admits only the runtime's own origins (`demoOrigins`), and one made by an earlier
 * start for every origin, or for another port, is brought to them.
 */
export async function ensureDemo(baseUrl: string, key: string): Promise<Demo> {
  const own = demoOrigins(baseUrl);
  const widgets = (await call(baseUrl, key, 'GET', '/widget-settings?limit=100')) as { id: string; name: string; is_active: boolean; allowed_origins?: string[] }[];
  const found = widgets.find((w) => w.name === DEMO_WIDGET_NAME && w.is_active);
  if (found) {
    const origins = demoOriginsUpdate(found.allowed_origins, own);
    if (origins) await call(baseUrl, key, 'PATCH', `/widget-settings/${found.id}`, { allowed_origins: origins });
    // With a speech model the demo shows the call button (never turned off here: an operator may have set it).
    if (speechModel() && !(found as { voice_enabled?: boolean }).voice_enabled) await call(baseUrl, key, 'PATCH', `/widget-settings/${found.id}`, { voice_enabled: true });
    return { widgetId: found.id, created: false, originsUpdated: !!origins };
  }
  const kb = await call(baseUrl, key, 'POST', '/rag/knowledge-bases', { name: 'Demo knowledge base', description: 'What the demo agent knows (GET /demo)' });
  await call(baseUrl, key, 'POST', '/rag/ingest', { kb_id: kb.id, text: DEMO_DOCUMENT, metadata: { title: 'About Harbor Street Coffee' } });
  const widget = await call(baseUrl, key, 'POST', '/widget-settings', {
    name: DEMO_WIDGET_NAME, title: 'Harbor Street Coffee', greeting: 'Hi! Ask me about our opening hours, coffee or pastries.',
    placeholder: 'Ask a question…', primary_color: '#0f766e', allowed_origins: own, voice_enabled: speechModel(),
  });
  const agent = await call(baseUrl, key, 'POST', '/agents', {
    name: 'Demo agent', agent_name: 'Robin', knowledge_base: kb.id, widget_settings_id: widget.id,
    prompt: 'You are {{agent_name}}, the friendly assistant of Harbor Street Coffee. Answer from the knowledge base, briefly.',
    begin_message: 'Hello, I am {{agent_name}}. What would you like to know?',
    selected_tools: [{ type: 'end_call' }],
  });
  return { widgetId: widget.id, agentId: agent.id, knowledgeBaseId: kb.id, created: true };
}

/** A speech model is configured (web calls work): the demo widget gets its call button (docs/api.md, "Web calls"). */
const speechModel = () => !!(process.env.REALTIME_BASE_URL || process.env.REALTIME_API_KEY);

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The demo page: the widget's script tag, exactly as a customer pastes it. */
export function demoPage(widgetId: string): string {
  const tag = `<script src="/api/v1/widget/embed.js" data-widget-id="${escape(widgetId)}" async></script>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Widget demo · Voice AI Agent Platform (local)</title>
${FAVICON_LINK}
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:720px;margin:40px auto;padding:0 16px;color:#0f172a}code,pre{background:#f1f5f9;border-radius:6px}pre{padding:12px;overflow:auto}</style>
</head><body><main>
<h1>Your agent on a web page</h1>
<p>The button in the corner is the web widget of the local organization (<code>${escape(widgetId)}</code>). Open it and ask, for instance, <em>When do you open on Saturdays?</em></p>
<p>This page holds nothing but the tag you would paste into your own site (with the full URL of your API):</p>
<pre><code>${escape(tag)}</code></pre>
<p>Change the agent's prompt, its knowledge base or the widget's look through the API: see the README, "Put the agent on your website".</p>
${speechModel()
    ? '<p id="voice">To hear the agent, press the phone icon in the widget\'s head and allow the microphone (a web call: README, "Hear your agent"). '
      + 'The icon shows only while the widget\'s <code>voice_enabled</code> is true: this runtime turned it on for the demo widget when it started with a speech model; '
      + 'for a widget of your own, <code>PATCH /api/v1/widget-settings/{id}</code> with <code>{"voice_enabled": true}</code>.</p>'
    : '<p id="voice">To hear the agent in the browser, two steps: (1) start the platform with a speech model, <code>REALTIME_API_KEY=sk-… npm start</code> '
      + '(OpenAI\'s Realtime API; <code>REALTIME_BASE_URL</code> only for another Realtime-compatible server); (2) the widget\'s <code>voice_enabled</code> must be true: '
      + 'this runtime turns it on for the demo widget when it starts with a speech model, and for a widget of your own <code>PATCH /api/v1/widget-settings/{id}</code> '
      + 'with <code>{"voice_enabled": true}</code>. The widget then shows a call button (a phone icon in its head).</p>'}
</main>
${tag}
</body></html>`;
}

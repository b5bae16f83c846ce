/**
 * Black-box: web calls at the organization's concurrency limit (docs/api.md, "Concurrency limits"):
 * `POST /web-calls` and the widget's call button (`POST /widget/{id}/calls`) answer 429
 * `CONCURRENCY_LIMIT` with `Retry-After` and write nothing; a web call's slot is freed by its end.
 * No browser connects: a started web call is `ringing` and holds its slot until it ends.
 */
import { callOf, endMove, moveCall } from '../../shared/domain/calls/lifecycle';
import { usePlatform } from '../support/platform';

const local = usePlatform({ voice: false, env: { REALTIME_BASE_URL: 'http://127.0.0.1:9', REALTIME_API_KEY: 'sk-stand-in', VOICE_RUNTIME_URL: 'ws://127.0.0.1:9/stream' } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);
const ORIGIN = 'https://shop.example.com';

let agentId: string;
let widgetId: string;

beforeAll(async () => {
  const widget = await api('POST', '/api/v1/widget-settings', { body: { name: 'Voice widget', allowed_origins: [ORIGIN], voice_enabled: true } });
  expect(widget.status).toBe(200);
  widgetId = widget.body.data.id;
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Web desk', status: 'AGENT_STATUS_ACTIVE', widget_settings_id: widgetId, s2s_model: 'gpt-realtime', begin_message: 'Hi.' } });
  expect(agent.status).toBe(200);
  agentId = agent.body.data.id;
  expect((await api('PATCH', '/api/v1/concurrency', { body: { limit: 1 } })).status).toBe(200);
});

const widgetCall = () => api('POST', `/api/v1/widget/${widgetId}/calls`, { key: null, headers: { origin: ORIGIN }, body: {} });
const callsCount = async () => (await api('GET', '/api/v1/calls?limit=100')).body.data.length;

it('refuses a web call and the widget\'s call button at the limit (429, Retry-After, nothing written), and takes them again once the slot frees', async () => {
  const first = await api('POST', '/api/v1/web-calls', { body: { agent_id: agentId } });
  expect(first.status).toBe(200);
  const callId = first.body.data.call_id ?? first.body.data.call?.id;
  expect(callId).toBeDefined();
  const before = await callsCount();

  const refused = await api('POST', '/api/v1/web-calls', { body: { agent_id: agentId } });
  expect(refused.status).toBe(429);
  expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(refused.body.error).toMatchObject({ code: 'CONCURRENCY_LIMIT', details: { limit: 1, in_progress: 1 } });

  const button = await widgetCall();
  expect(button.status).toBe(429);
  expect(button.headers.get('retry-after')).toMatch(/^\d+$/);
  expect(button.body.error.code).toBe('CONCURRENCY_LIMIT');
  // The page may read the refusal (CORS allows its origin).
  expect(button.headers.get('access-control-allow-origin')).toBe(ORIGIN);

  expect(await callsCount()).toBe(before);
  expect((await api('GET', '/api/v1/concurrency')).body.data).toMatchObject({ in_progress: { web: 1, total: 1 }, queued: 0 });

  const orgId = (await api('GET', `/api/v1/calls/${callId}`)).body.data.organization_id;
  await moveCall((await callOf(orgId, callId))!, endMove('canceled'), { at: new Date().toISOString() });
  expect((await api('GET', '/api/v1/concurrency')).body.data.in_progress.total).toBe(0);
  const again = await widgetCall();
  expect(again.status).toBe(200);
  expect((await api('GET', '/api/v1/concurrency')).body.data.in_progress).toMatchObject({ web: 1, total: 1 });
});

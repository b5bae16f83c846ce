/**
 * The synthesized stack, every operation once (issue 41, "What we deploy is what we run"): every
 * route of the template's HTTP API and every method of its REST API gets one request through the
 * stack's URLs with a valid key, the body its docs/openapi.json example (the example's ids
 * replaced by items made first, so reads and writes meet real items where it is cheap). No answer
 * may be a 5xx, no AWS call refused by a function's role, and no function may log a missing
 * setting or a bundle that does not load. Then every function's bundle loads (its init, as Lambda
 * runs it, with the template's environment): the job functions no route reaches, the others warm already.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { exampleIds } from '../../shared/http/openapi-examples';
import { restMethods } from '../../shared/local/stack/rest-api';
import { expectCleanStack, useStackTier } from './support';

const tier = useStackTier();

/** One id nobody made: a plausible UUIDv7. */
const NOBODY = '01936f50-0000-7000-8000-00000000a041';

interface Operation {
  method: string;
  /** Path with `{param}`s, as the template names it. */
  path: string;
  api: 'http' | 'rest';
}

const openapi = JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'openapi.json'), 'utf8')) as { paths: Record<string, Record<string, any>> };

/** The operation's documented request body example and its media type. */
function exampleOf(method: string, path: string): { contentType: string; example: unknown } | undefined {
  const candidates = [path, path.replace(/^\/api\/v1/, ''), `/api/v1${path}`];
  for (const p of candidates) {
    const op = openapi.paths[p]?.[method.toLowerCase()];
    if (!op) continue;
    const content = op.requestBody?.content as Record<string, { example?: unknown; examples?: Record<string, { value: unknown }> }> | undefined;
    if (!content) return undefined;
    const [contentType, media] = Object.entries(content)[0]!;
    return { contentType, example: media.example ?? Object.values(media.examples ?? {})[0]?.value };
  }
  return undefined;
}

/** Creations first, then reads, then changes, deletions last (later steps meet the items earlier ones made). */
const ORDER: Record<string, number> = { POST: 0, GET: 1, PUT: 2, PATCH: 2, DELETE: 3 };

async function pool<T>(items: T[], width: number, work: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: width }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  }));
}

it('answers every operation of the template without a 5xx, an AccessDenied or a missing setting', async () => {
  const t = tier();
  const { stack, api } = t;
  const ok = async (method: string, path: string, body?: unknown) => {
    const res = await api(method, path, { body });
    if (res.status !== 200) throw new Error(`${method} ${path} answered ${res.status}: ${res.text.slice(0, 500)}`);
    return res.body.data;
  };

  // Items the operations' ids name, made as a user would.
  const agent = await ok('POST', '/api/v1/agents', { name: 'Operations', prompt: 'You answer briefly.', begin_message: 'Hello.' });
  const tool = await ok('POST', '/api/v1/tools', { name: 'Lookup', type: 'webhook', url: t.secure(`${t.receiver.url}/tool`), definition: { name: 'lookup', parameters: { type: 'object', properties: {} } } });
  const contact = await ok('POST', '/api/v1/contacts', { first_name: 'Ada', phone: '+14155550142' });
  const kb = await ok('POST', '/api/v1/rag/knowledge-bases', { name: 'Operations' });
  const webhook = await ok('POST', '/api/v1/webhooks', { url: t.secure(`${t.receiver.url}/events`), events: ['*'] });
  const number = await ok('POST', '/api/v1/phone-numbers/import', { phone: '+14155550143', type: 'pstn' });
  const chat = await ok('POST', '/api/v1/chats', { agent_id: agent.id });
  const campaign = await ok('POST', '/api/v1/campaigns', { name: 'Operations', agent_id: agent.id, phone_number_id: number.id, from_phone_number: number.phone, contact_ids: [contact.id] });
  const test = await ok('POST', `/api/v1/agents/${agent.id}/tests`, { name: 'Greets', user: { turns: ['hello'] }, criteria: [{ type: 'reply_contains', text: 'ok' }] });
  const appointment = await ok('POST', '/api/v1/scheduler/appointments', { agent_id: agent.id, start_time: '2032-01-05T09:00:00Z', duration_minutes: 15, attendee_name: 'Ada' });

  // The examples' ids are replaced by these (the document's examples name the same ids throughout).
  const real: Record<string, string> = {
    [exampleIds.org]: t.organizationId, [exampleIds.agent]: agent.id, [exampleIds.tool]: tool.id, [exampleIds.widget]: agent.widget_settings_id ?? NOBODY,
    [exampleIds.contact]: contact.id, [exampleIds.kb]: kb.id, [exampleIds.phoneNumber]: number.id, [exampleIds.webhook]: webhook.id,
    [exampleIds.campaign]: campaign.id, [exampleIds.appointment]: appointment.id,
  };
  // The examples' outside hosts (https://www.example.com/pricing, https://hooks.example.com/…) are the receiver: a crawl or a delivery reaches something.
  const outside = t.secure(t.receiver.url);
  const withRealIds = (value: unknown) =>
    JSON.parse(Object.entries(real).reduce((text, [from, to]) => text.split(from).join(to), JSON.stringify(value)).replace(/https:\/\/[a-z0-9.-]*example\.com/g, outside));
  const byResource: Record<string, string> = {
    agents: agent.id, tools: tool.id, contacts: contact.id, campaigns: campaign.id, chats: chat.id, 'phone-numbers': number.id, webhooks: webhook.id,
    widget: agent.widget_settings_id ?? NOBODY, 'widget-settings': agent.widget_settings_id ?? NOBODY, appointments: appointment.id,
  };
  const byName: Record<string, string> = { test_id: test.id, version: '1', org_id: t.organizationId, agent_id: agent.id, kb_id: kb.id, phone: '+14155550144', model: 'stand-in-model' };
  const fill = (path: string) =>
    path.replace(/([^/]*)\/\{(\w+)\}/g, (_, segment: string, name: string) => {
      // Our own key is never the one deleted: api-keys take an id nobody made.
      const value = name === 'id' ? (segment === 'api-keys' ? NOBODY : (byResource[segment] ?? NOBODY)) : (byName[name] ?? NOBODY);
      return `${segment}/${encodeURIComponent(value)}`;
    });

  // Every operation the template holds: the HTTP API's routes, the REST API's methods.
  const httpApi = stack.assembly.ofType('AWS::ApiGatewayV2::Api').find((a) => a.props.ProtocolType === 'HTTP')!;
  const operations: Operation[] = stack.assembly
    .ofType('AWS::ApiGatewayV2::Route')
    .filter((r) => r.props.ApiId === httpApi.ref && r.props.RouteKey !== '$default')
    .map((r) => {
      const [method, path] = String(r.props.RouteKey).split(' ');
      return { method: method!, path: path!, api: 'http' as const };
    });
  for (const api of stack.assembly.ofType('AWS::ApiGateway::RestApi')) {
    operations.push(...restMethods(stack.assembly, api).map((m) => ({ method: m.method, path: m.path, api: 'rest' as const })));
  }
  expect(operations.length).toBe(stack.counts.httpRoutes - 1 + stack.counts.restMethods);
  operations.sort((a, b) => (ORDER[a.method] ?? 1) - (ORDER[b.method] ?? 1) || a.path.localeCompare(b.path));

  const answers: { op: string; status: number; text: string }[] = [];
  const started = Date.now();
  for (const phase of [0, 1, 2, 3]) {
    await pool(operations.filter((o) => (ORDER[o.method] ?? 1) === phase), 4, async (o) => {
      const example = exampleOf(o.method, o.path);
      const base = o.api === 'http' ? stack.url : stack.streamingUrl!;
      const headers: Record<string, string> = { 'x-api-key': t.key };
      let body: string | undefined;
      if (example?.example !== undefined) {
        const value = withRealIds(example.example);
        headers['content-type'] = example.contentType;
        body = example.contentType === 'application/x-www-form-urlencoded' ? new URLSearchParams(value as Record<string, string>).toString() : JSON.stringify(value);
      }
      const response = await fetch(`${base}${fill(o.path)}`, { method: o.method, headers, body, signal: AbortSignal.timeout(30_000) });
      // A stream (SSE) is read to its end: the function's whole run is part of the operation.
      const text = await response.text();
      answers.push({ op: `${o.api === 'rest' ? 'REST ' : ''}${o.method} ${o.path}`, status: response.status, text });
    });
  }
  // The HTTP API's $default route: a path no route holds.
  const unknown = await api('GET', '/api/v1/no-such-route');
  answers.push({ op: '$default', status: unknown.status, text: unknown.text });
  await stack.queues.waitForIdle(30_000);
  console.log(`stack tier: ${answers.length} operations in ${((Date.now() - started) / 1000).toFixed(1)} s; statuses ${JSON.stringify(answers.reduce<Record<number, number>>((n, a) => ({ ...n, [a.status]: (n[a.status] ?? 0) + 1 }), {}))}`);

  expect(answers.filter((a) => a.status >= 500).map((a) => `${a.op} → ${a.status} ${a.text.slice(0, 300)}`)).toEqual([]);
  expect(unknown.status).toBe(404);
  // Most operations met a real item or a valid body: not every answer is a refusal.
  expect(answers.filter((a) => a.status === 200).length).toBeGreaterThan(answers.length / 3);
  expectCleanStack(stack);
}, 180_000);

it('loads every function\'s bundle with its template environment (init, as Lambda runs it), those no operation reached too', async () => {
  const { stack } = tier();
  const names = stack.lambda.functions().map((f) => f.name);
  expect(names.length).toBe(stack.counts.functions);
  const failed: string[] = [];
  const started = Date.now();
  await pool(names, 4, async (name) => {
    try {
      await stack.lambda.warm(name);
    } catch (err) {
      failed.push(`${stack.lambda.spec(name)!.logicalId}: ${(err as Error).name}: ${(err as Error).message}`);
    }
  });
  console.log(`stack tier: ${names.length} bundles loaded in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  expect(failed).toEqual([]);
  expectCleanStack(stack);
}, 180_000);

/**
 * Inputs an outside audit sent (issue 8, points 1–6): free-form JSON at and past its bounds,
 * wrong methods on fixed paths, missing bodies, upper-case ids, the shape of error details,
 * and a webhook that must not tell strangers which organizations exist.
 */
import { createHmac } from 'node:crypto';
import { usePlatform } from '../support/platform';
import { startFakeCalcom } from '../support/fake-calcom';

const local = usePlatform();
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);
const json = (text: string) => ({ body: text, headers: { 'content-type': 'application/json' } });
const orgA = () => local().platform.keys[0]!.organizationId;

/** `{"a":{"a":…1…}}` nested `levels` objects deep. */
const nested = (levels: number): unknown => (levels === 0 ? 1 : { a: nested(levels - 1) });
/** Keys the marshaller or a careless copy would trip on, all to be kept as data. */
const awkward = { constructor: { name: 'Set' }, toString: 'x', hasOwnProperty: 1, valueOf: { prototype: null }, 'a.b': [1, { constructor: 'Map' }] };

interface FreeFormTarget {
  label: string;
  /** Creates what the target writes into; returns the method and path of the write. */
  prepare(): Promise<{ method: string; path: string }>;
  /** The body that puts `value` into the field; `raw` is JSON text spliced in as is. */
  body(raw: string): string;
  /** The field as the API returns it after the write. */
  read(path: string, written: any): Promise<unknown>;
  field: string;
  /** The level of the free-form object the raw value sits at (the field itself is level 1). */
  level?: number;
}

let toolId = '';
let kbId = '';
beforeAll(async () => {
  toolId = (await api('POST', '/api/v1/tools', { body: { name: 'Lookup', definition: { name: 'lookup' } } })).body.data.id;
  kbId = (await api('POST', '/api/v1/rag/knowledge-bases', { body: { name: 'Hardening' } })).body.data.id;
});

const targets: FreeFormTarget[] = [
  {
    label: 'POST /contacts metadata',
    field: 'metadata',
    prepare: async () => ({ method: 'POST', path: '/api/v1/contacts' }),
    body: (raw) => `{"first_name":"Ada","metadata":${raw}}`,
    read: async (_p, written) => (await api('GET', `/api/v1/contacts/${written.id}`)).body.data.metadata,
  },
  {
    label: 'PATCH /contacts/{id} metadata',
    field: 'metadata',
    prepare: async () => ({ method: 'PATCH', path: `/api/v1/contacts/${(await api('POST', '/api/v1/contacts', { body: { first_name: 'B' } })).body.data.id}` }),
    body: (raw) => `{"metadata":${raw}}`,
    read: async (path) => (await api('GET', path)).body.data.metadata,
  },
  {
    label: 'POST /agents ivr_options',
    field: 'ivr_options',
    prepare: async () => ({ method: 'POST', path: '/api/v1/agents' }),
    body: (raw) => `{"name":"A","ivr_options":${raw}}`,
    read: async (_p, written) => (await api('GET', `/api/v1/agents/${written.id}`)).body.data.ivr_options,
  },
  {
    label: 'PATCH /agents/{id} integrations',
    field: 'integrations',
    prepare: async () => ({ method: 'PATCH', path: `/api/v1/agents/${(await api('POST', '/api/v1/agents', { body: { name: 'B' } })).body.data.id}` }),
    body: (raw) => `{"integrations":${raw}}`,
    read: async (path) => (await api('GET', path)).body.data.integrations,
  },
  {
    label: 'POST /agents selected_tools extras',
    field: 'selected_tools',
    level: 3,
    prepare: async () => ({ method: 'POST', path: '/api/v1/agents' }),
    body: (raw) => `{"name":"C","selected_tools":[{"tool_id":"${toolId}","extra":${raw}}]}`,
    read: async (_p, written) => (await api('GET', `/api/v1/agents/${written.id}`)).body.data.selected_tools[0].extra,
  },
  {
    label: 'POST /rag/ingest metadata',
    field: 'metadata',
    prepare: async () => ({ method: 'POST', path: '/api/v1/rag/ingest' }),
    body: (raw) => `{"kb_id":"${kbId}","doc_id":"doc-${Math.random().toString(36).slice(2)}","text":"Opening hours are nine to five.","metadata":${raw}}`,
    read: async (_p, written) =>
      (await api('GET', `/api/v1/rag/document?org_id=${orgA()}&doc_id=${encodeURIComponent(written.documents[0].doc_id)}`)).body.data.metadata,
  },
];

describe('free-form JSON objects: one set of bounds, answered with 400 naming the field, never 500', () => {
  const refused: [string, string, RegExp][] = [
    ['nested 40 levels deep', JSON.stringify(nested(40)), /deeper than 16 levels/],
    ['nested 17 levels deep', JSON.stringify(nested(17)), /deeper than 16 levels/],
    ['a __proto__ key', '{"__proto__":{"polluted":true}}', /__proto__/],
    ['an empty key', '{"":1}', /empty/],
    ['a number beyond DynamoDB\'s range', '{"n":1e130}', /range/],
    ['a number below DynamoDB\'s precision', '{"n":1e-140}', /range/],
    ['a string with a lone surrogate', '{"s":"\\ud800"}', /Unicode/],
    ['more than 16 KiB of JSON', JSON.stringify({ big: 'x'.repeat(17_000) }), /16384 bytes/],
  ];
  for (const target of targets) {
    it(`${target.label}: refuses each out-of-bounds value`, async () => {
      const { method, path } = await target.prepare();
      for (const [what, raw, message] of refused) {
        const res = await api(method, path, json(target.body(raw)));
        const summary = `${what} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
        expect([summary, res.status]).toEqual([summary, 400]);
        expect([summary, res.body.error.details.fields.some((f: any) => f.path.startsWith(target.field) && message.test(f.message))]).toEqual([summary, true]);
      }
    });

    it(`${target.label}: keeps keys such as constructor as data, 16 levels deep included`, async () => {
      const { method, path } = await target.prepare();
      // `deep` is one level below the value, whose innermost object is then at level 16.
      const value = { ...awkward, deep: nested(16 - (target.level ?? 1)) };
      const res = await api(method, path, json(target.body(JSON.stringify(value))));
      expect([res.status, res.body.success]).toEqual([200, true]);
      const read = async () => target.read(path, res.body.data);
      expect(await read()).toEqual(value);
    });
  }
});

describe('whatever else a write stores', () => {
  it('answers 413, not 500, for a tool too large for one stored item, and 400 for a number DynamoDB cannot hold', async () => {
    const parameter = (i: number) => [`p${i}`, { type: 'string', description: 'd'.repeat(1000), enum: Array.from({ length: 10 }, (_, j) => `${j}${'v'.repeat(400)}`) }];
    const properties = Object.fromEntries(Array.from({ length: 100 }, (_, i) => parameter(i)));
    const huge = await api('POST', '/api/v1/tools', { body: { name: 'Huge', definition: { name: 'huge', parameters: { type: 'object', properties } } } });
    expect([huge.status, huge.body.error?.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const numbers = await api('POST', '/api/v1/tools', json('{"name":"N","definition":{"name":"n","parameters":{"type":"object","properties":{"x":{"type":"number","enum":[1e130]}}}}}'));
    expect([numbers.status, numbers.body.error?.details?.fields?.[0]?.path]).toEqual([400, 'definition.parameters.properties.x.enum.0']);
  });

  it('refuses a __proto__ header or parameter name instead of dropping it', async () => {
    const headers = await api('POST', '/api/v1/tools', json('{"name":"H","type":"webhook","url":"https://example.com/hook","definition":{"name":"h"},"headers":{"__proto__":"x"}}'));
    expect([headers.status, headers.body.error?.details?.fields?.[0]?.path]).toEqual([400, 'headers']);
    const params = await api('POST', '/api/v1/tools', json('{"name":"P","definition":{"name":"p","parameters":{"type":"object","properties":{"__proto__":{"type":"string"}}}}}'));
    expect([params.status, params.body.error?.details?.fields?.[0]?.path]).toEqual([400, 'definition.parameters.properties']);
  });
});

describe('wrong method on a fixed path', () => {
  const cases: [string, string, string][] = [
    ['PATCH', '/api/v1/contacts/search', 'GET'],
    ['DELETE', '/api/v1/contacts/search', 'GET'],
    ['GET', '/api/v1/phone-numbers/buy', 'POST'],
    ['PATCH', '/api/v1/phone-numbers/available', 'GET'],
    ['DELETE', '/api/v1/phone-numbers/available', 'GET'],
    ['GET', '/api/v1/phone-numbers/import', 'POST'],
  ];
  for (const [method, path, allow] of cases) {
    it(`${method} ${path} answers 405 with Allow: ${allow}`, async () => {
      const res = await api(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: {} });
      expect([res.status, res.body.error?.code, res.headers.get('allow')]).toEqual([405, 'METHOD_NOT_ALLOWED', allow]);
    });
  }
});

describe('bodies', () => {
  it('refuses a missing body where the operation takes one', async () => {
    for (const [method, path] of [['POST', '/api/v1/contacts'], ['POST', '/api/v1/agents'], ['PUT', '/api/v1/scheduler/integration']]) {
      const res = await api(method, path);
      expect([method, path, res.status, res.body.error.details.fields]).toEqual([method, path, 400, [{ path: 'body', message: 'is required', in: 'body' }]]);
    }
    const empty = await api('POST', '/api/v1/contacts', { body: {} });
    expect(empty.status).toBe(200);
  });

  it('refuses a whitespace-only SIP termination URI instead of trimming it away', async () => {
    const res = await api('POST', '/api/v1/phone-numbers/import', { body: { phone: '+14155550199', type: 'sip', termination_uri: '   ' } });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields[0].path).toBe('termination_uri');
  });
});

describe('ids are case-insensitive', () => {
  it('finds a resource by its id in upper case, in paths, queries and body references', async () => {
    const contact = (await api('POST', '/api/v1/contacts', { body: { first_name: 'Upper' } })).body.data;
    const got = await api('GET', `/api/v1/contacts/${contact.id.toUpperCase()}`);
    expect([got.status, got.body.data?.id]).toEqual([200, contact.id]);
    const agent = await api('POST', '/api/v1/agents', { body: { name: 'Refs', selected_tools: [{ tool_id: toolId.toUpperCase() }] } });
    expect([agent.status, agent.body.data?.selected_tools]).toEqual([200, [{ tool_id: toolId }]]);
    const docs = await api('GET', `/api/v1/rag/documents?kb_id=${kbId.toUpperCase()}`);
    expect(docs.status).toBe(200);
    expect(docs.body.data.length).toBeGreaterThan(0);
  });
});

describe('error details', () => {
  it('names a phone number\'s problem', async () => {
    const cases: [string, RegExp][] = [
      ['4155550123', /must be E\.164, such as \+14155550123/],
      ['+1415555', /too short/],
      ['+1415555012345678', /too long/],
      ['+11235550123', /not a valid US number/],
      ['call me', /must be E\.164/],
    ];
    for (const [phone, message] of cases) {
      const res = await api('POST', '/api/v1/contacts', { body: { phone } });
      expect([phone, res.status, res.body.error.details.fields[0].path]).toEqual([phone, 400, 'phone']);
      expect([phone, res.body.error.details.fields[0].message]).toEqual([phone, expect.stringMatching(message)]);
    }
  });

  it('gives a price mismatch of a purchase as {path, message} fields', async () => {
    const listed = (await api('GET', '/api/v1/phone-numbers/available?limit=1')).body.data[0];
    const res = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: listed.phone_number, price: listed.price + 1 } });
    expect(res.status).toBe(422);
    expect(res.body.error.details.fields).toEqual([{ path: 'price', message: expect.stringContaining(String(listed.price)) }]);
  });
});

describe('the Cal.com webhook does not tell strangers which organizations exist', () => {
  it('answers an unknown organization exactly as a known one with a bad signature', async () => {
    const cal = await startFakeCalcom();
    try {
      const put = await api('PUT', '/api/v1/scheduler/integration', {
        body: { provider: 'calcom', api_key: cal.apiKey, event_type_id: cal.eventTypeId, base_url: cal.url, webhook_secret: 'whsec_hardening' },
      });
      expect(put.status).toBe(200);
    } finally {
      await cal.close();
    }
    const body = JSON.stringify({ triggerEvent: 'PING', payload: {} });
    const bad = createHmac('sha256', 'not-the-secret').update(body).digest('hex');
    const send = (org: string) => api('POST', `/api/v1/scheduler/webhooks/calcom/${org}`, { key: null, ...json(body), headers: { 'content-type': 'application/json', 'x-cal-signature-256': bad } });
    const known = await send(orgA());
    const unknown = await send('0190aaaa-0000-7000-8000-000000000000');
    expect(known.status).toBe(401);
    expect([unknown.status, unknown.body.error, unknown.body.message]).toEqual([known.status, known.body.error, known.body.message]);
  });
});

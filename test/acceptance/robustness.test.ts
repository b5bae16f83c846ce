/**
 * No input a client can send produces a 500 or a hang: every registered operation is sent
 * hostile paths, queries, bodies and headers, and must answer a 2xx/4xx JSON envelope.
 */
import { operations } from '../../shared/http/registry';
import { usePlatform } from '../support/platform';

const local = usePlatform();

const junkIds = ['not-a-uuid', '0190aaaa-0000-7000-8000-000000000000', '%00', '..%2F..%2Fetc', 'a'.repeat(300), "' OR 1=1 --"];
const junkBodies: unknown[] = [
  null, [], 'text', 42, true, {},
  { name: { $ne: 1 } },
  { name: 'x'.repeat(10_000), limit: -1, id: null },
  { nested: JSON.parse('['.repeat(200) + ']'.repeat(200)) },
  { __proto__: { polluted: true }, constructor: { prototype: { polluted: true } } },
  { phone: '+1', email: '@', start_time: 'yesterday', timezone: 'Mars/Olympus', status: 'ANY', schedule: { max_concurrent: 1e308 } },
];
const junkQueries = ['limit=abc', 'limit=-5', 'offset=1e9', 'cursor=%ff%fe', 'limit=10&limit=20', 'q=' + 'z'.repeat(5000), 'org_id=other&doc_id=x'];

function fill(path: string, id: string): string {
  return path.replace(/\{[^}]+\}/g, encodeURIComponent(id).replace(/%25/g, '%'));
}

describe('every operation answers hostile input with a 4xx envelope, never a 500', () => {
  for (const op of operations.filter((o) => o.method !== 'OPTIONS')) {
    it(`${op.method} ${op.path}`, async () => {
      const api = local().api;
      const requests: { path: string; body?: unknown; headers?: Record<string, string> }[] = [];
      for (const id of op.path.includes('{') ? junkIds : ['']) requests.push({ path: fill(op.path, id) });
      const base = fill(op.path, '0190aaaa-0000-7000-8000-000000000000');
      for (const q of junkQueries) requests.push({ path: `${base}?${q}` });
      if (['POST', 'PUT', 'PATCH'].includes(op.method)) {
        for (const body of junkBodies) requests.push({ path: base, body: JSON.stringify(body) ?? 'null', headers: { 'content-type': 'application/json' } });
        requests.push({ path: base, body: '{"unterminated": ', headers: { 'content-type': 'application/json' } });
        requests.push({ path: base, body: '<xml/>', headers: { 'content-type': 'application/xml' } });
      }
      for (const r of requests) {
        const res = await api(op.method, r.path, { body: r.body, headers: r.headers });
        const summary = `${op.method} ${r.path.slice(0, 120)} ${String(r.body).slice(0, 80)} → ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`;
        expect([summary, res.status < 500]).toEqual([summary, true]);
        if (res.status < 400 || op.method === 'HEAD') continue; // HEAD answers the headers alone, never a body
        // The OpenAI-compatible paths answer errors as OpenAI does ({ error: { message, type, code } }), the rest the envelope.
        if (op.openAiCompatible) expect([summary, typeof res.body?.error?.message, typeof res.body?.error?.type]).toEqual([summary, 'string', 'string']);
        else expect([summary, res.body?.success, typeof res.body?.error?.code]).toEqual([summary, false, 'string']);
      }
    });
  }
});

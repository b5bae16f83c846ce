import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadContract } from '../../support/contract';

/**
 * The acceptance tier's response check (test/support/contract.ts), proven against the repository's
 * own document: a response as documented passes, and one field outside its schema, an undeclared
 * status or a path the document lacks each fail, naming what is wrong.
 */
const document = JSON.parse(readFileSync(resolve(__dirname, '../../../docs/openapi.json'), 'utf8'));
const contract = loadContract(document);
const documented = (path: string, method: string) => document.paths[path][method].responses['200'].content['application/json'].example;
const campaignId = '01936f4e-9b1c-7d2e-8f3a-4b5c6d7e8f90';
const json = (body: unknown) => ({ contentType: 'application/json; charset=utf-8', text: JSON.stringify(body) });

it('passes a response as the document describes it (its own example)', () => {
  const body = documented('/api/v1/campaigns/{id}', 'get');
  expect(contract.check({ method: 'GET', path: `/api/v1/campaigns/${campaignId}`, status: 200, ...json(body) })).toEqual([]);
  expect(contract.check({ method: 'GET', path: '/api/v1/campaigns?limit=5', status: 200, ...json(documented('/api/v1/campaigns', 'get')) })).toEqual([]);
});

it('fails a response with a field outside its schema, naming the field and the operation', () => {
  const body = documented('/api/v1/campaigns/{id}', 'get');
  const found = contract.check({ method: 'POST', path: `/api/v1/campaigns/${campaignId}/start`, status: 200, ...json({ ...body, data: { ...body.data, agent_version_fixed: true } }) });
  expect(found).toHaveLength(1);
  expect(found[0]).toMatch(/startCampaign's 200 schema/);
  expect(found[0]).toMatch(/\/data must NOT have additional properties "agent_version_fixed"/);
});

it('fails a list item that is not the documented item (a full campaign where the summary is promised)', () => {
  const full = documented('/api/v1/campaigns/{id}', 'get').data;
  const found = contract.check({ method: 'GET', path: '/api/v1/campaigns', status: 200, ...json({ success: true, message: 'ok', data: [full], meta: { total: 1, limit: 20, offset: 0, next_cursor: null } }) });
  expect(found.join('\n')).toMatch(/\/data\/0 must NOT have additional properties "agent_id"/);
});

it('fails a status the operation does not declare, and a body of a wrong type', () => {
  const error = { success: false, message: 'no', error: { code: 'UNPROCESSABLE', message: 'no', details: {} } };
  expect(contract.check({ method: 'GET', path: `/api/v1/campaigns/${campaignId}`, status: 418, ...json(error) })[0]).toMatch(/status 418 is not declared for getCampaign/);
  expect(contract.check({ method: 'GET', path: `/api/v1/campaigns/${campaignId}`, status: 404, ...json({ ...error, success: 'no' }) })[0]).toMatch(/\/success must be boolean/);
  expect(contract.check({ method: 'GET', path: `/api/v1/campaigns/${campaignId}`, status: 200, contentType: 'text/html', text: '<p>' })[0]).toMatch(/not "text\/html"/);
});

it('accepts only 404 or 405 from a path or method the document lacks', () => {
  const notFound = { success: false, message: 'Not found', error: { code: 'NOT_FOUND', message: 'Not found', details: {} } };
  expect(contract.check({ method: 'GET', path: '/api/v1/nothing-here', status: 404, ...json(notFound) })).toEqual([]);
  expect(contract.check({ method: 'GET', path: '/api/v1/nothing-here', status: 200, ...json({}) })[0]).toMatch(/has no path/);
  expect(contract.check({ method: 'PUT', path: '/api/v1/campaigns', status: 200, ...json({}) })[0]).toMatch(/has no PUT/);
  // The local runtime's own pages are not the API.
  expect(contract.check({ method: 'GET', path: '/demo', status: 200, contentType: 'text/html', text: '<html>' })).toEqual([]);
});

it('holds the answers of a plain fetch to the platform too (a test\'s own, a stand-in\'s, an SDK\'s), recording each mismatch', async () => {
  const { createServer } = await import('node:http');
  const { watchFetch } = await import('../../support/platform');
  const full = documented('/api/v1/campaigns/{id}', 'get').data;
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ success: true, message: 'ok', data: req.url === '/api/v1/campaigns' ? [full] : [], meta: { total: 1, limit: 20, offset: 0, next_cursor: null } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const mismatches: string[] = [];
  const unwatch = watchFetch(base, mismatches);
  try {
    const res = await fetch(`${base}/api/v1/campaigns`);
    expect(((await res.json()) as { data: unknown[] }).data).toHaveLength(1); // the caller still reads the body
    expect(mismatches.join('\n')).toMatch(/listCampaigns's 200 schema/);
  } finally {
    unwatch();
    server.close();
  }
});

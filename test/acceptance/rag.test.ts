/**
 * Black-box: the knowledge base through the local runtime's HTTP API, against a small site
 * served on 127.0.0.1 (ALLOW_LOOPBACK_FETCH opens loopback only; private addresses stay refused).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { minimalPdf } from '../support/pdf';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const page = (title: string, body: string, links: string[] = []) =>
  `<!doctype html><html><head><title>${title}</title></head><body><nav><a href="/">Home</a></nav><main><h1>${title}</h1>${body}` +
  `<ul>${links.map((l) => `<li><a href="${l}">${l}</a></li>`).join('')}</ul></main><footer>© Example</footer></body></html>`;

let site: Server;
let base = '';
const hits: string[] = [];

beforeAll(async () => {
  site = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.push(path);
    const html = (s: string) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(s);
    };
    switch (path.split('?')[0]) {
      case '/robots.txt':
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(`User-agent: *\nDisallow: /private/\n\nSitemap: ${base}/sitemap.xml\n`);
      case '/sitemap.xml':
        res.writeHead(200, { 'content-type': 'application/xml' });
        return res.end(
          `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">` +
            `<url><loc>${base}/</loc></url><url><loc>${base}/refunds</loc></url><url><loc>${base}/private/secret</loc></url></urlset>`,
        );
      case '/':
        return html(
          page('Acme Support', '<p>Welcome to the Acme help centre.</p>', [
            '/refunds', '/level1', '/private/hidden', 'http://other.example.com/elsewhere', '/broken', '/go-private', '/go-metadata',
            '/docs?b=2&a=1', '/docs?a=1&b=2#top', '/level1#again',
          ]),
        );
      case '/refunds':
        return html(page('Refund policy', '<p>You can request a refund within 30 days of purchase. Refunds are paid back to the original card within five business days.</p><p>Digital gift cards cannot be refunded.</p>'));
      case '/level1':
        return html(page('Shipping', '<p>Orders ship from our warehouse in Rotterdam. Standard shipping takes three to five days across Europe.</p>', ['/level2']));
      case '/level2':
        return html(page('Level two', '<p>Deeper page.</p>', ['/level3']));
      case '/level3':
        return html(page('Level three', '<p>Deepest page.</p>'));
      case '/docs':
        return html(page('Docs', '<p>Documentation index.</p>'));
      case '/broken':
        res.writeHead(500, { 'content-type': 'text/plain' });
        return res.end('boom');
      case '/go-private':
        res.writeHead(302, { location: 'http://10.0.0.1/admin' });
        return res.end();
      case '/go-metadata':
        res.writeHead(301, { location: 'http://169.254.169.254/latest/meta-data/' });
        return res.end();
      default:
        res.writeHead(404, { 'content-type': 'text/plain' });
        return res.end('not found');
    }
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((r) => site.close(r));
});

async function createKb(name = 'Support'): Promise<string> {
  const res = await api('POST', '/api/v1/rag/knowledge-bases', { body: { name, description: 'Help centre' } });
  expect(res.status).toBe(200);
  return res.body.data.id;
}

async function documentStatus(orgId: string, docId: string) {
  const res = await api('GET', `/api/v1/rag/document?org_id=${orgId}&doc_id=${encodeURIComponent(docId)}`);
  expect(res.status).toBe(200);
  return res.body.data;
}

const orgA = () => local().platform.keys[0]!.organizationId;

describe('discover', () => {
  it('follows sitemap and links on the root host, honouring depth, robots.txt and redirects to private addresses', async () => {
    const res = await api('POST', '/api/v1/rag/discover', { body: { url: `${base}/`, max_depth: 2 } });
    expect(res.status).toBe(200);
    const urls: string[] = res.body.data.urls;
    expect(res.body.data.total).toBe(urls.length);
    expect(urls[0]).toBe(`${base}/`);
    expect(urls).toEqual(expect.arrayContaining([`${base}/refunds`, `${base}/level1`, `${base}/level2`, `${base}/docs?a=1&b=2`, `${base}/broken`]));
    // Depth 3 is beyond max_depth 2; robots.txt disallows /private/; other hosts are never listed.
    expect(urls).not.toContain(`${base}/level3`);
    expect(urls.some((u) => u.includes('/private/'))).toBe(false);
    expect(urls.some((u) => !u.startsWith(base))).toBe(false);
    // Redirects into private and metadata addresses are refused and dropped.
    expect(urls).not.toContain(`${base}/go-private`);
    expect(urls).not.toContain(`${base}/go-metadata`);
    // Normalized and deduplicated: one /docs for two spellings, no fragments.
    expect(urls.filter((u) => u.startsWith(`${base}/docs`))).toHaveLength(1);
    expect(new Set(urls).size).toBe(urls.length);
    expect(urls.some((u) => u.includes('#'))).toBe(false);
    expect(hits.some((h) => h.startsWith('/private/'))).toBe(false);
  });

  it('defaults to depth 5 and stops at limit', async () => {
    const deep = await api('POST', '/api/v1/rag/discover', { body: { url: base } });
    expect(deep.body.data.urls).toContain(`${base}/level3`);
    const limited = await api('POST', '/api/v1/rag/discover', { body: { url: base, limit: 3 } });
    expect(limited.body.data).toEqual({ urls: expect.any(Array), total: 3 });
    expect(limited.body.data.urls).toHaveLength(3);
  });

  it.each(['http://169.254.169.254/latest/meta-data/', 'http://10.0.0.1/', 'http://[::ffff:10.0.0.1]/', 'http://[fd00:ec2::254]/'])(
    'refuses %s with a 400 naming url',
    async (url) => {
      const res = await api('POST', '/api/v1/rag/discover', { body: { url } });
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_ERROR');
      expect(res.body.error.details.fields[0].path).toBe('url');
    },
  );
});

describe('ingest and query', () => {
  let kbId: string;

  beforeAll(async () => {
    kbId = await createKb();
  });

  it('ingests text, URLs and uploaded files; each reaches indexed, the failing pages failed with a reason', async () => {
    const text = await api('POST', '/api/v1/rag/ingest', {
      body: {
        kb_id: kbId,
        doc_id: 'opening-hours',
        title: 'Opening hours',
        text: 'Our phone line is open Monday to Friday from 9am to 6pm. On Saturdays the shop opens from 10am to 2pm. We are closed on Sundays and public holidays.',
        metadata: { source: 'faq' },
      },
    });
    expect(text.status).toBe(200);
    expect(text.body.data.documents).toEqual([expect.objectContaining({ doc_id: 'opening-hours', status: 'pending', kb_id: kbId })]);

    const urls = await api('POST', '/api/v1/rag/ingest', {
      body: { kb_id: kbId, urls: [`${base}/refunds`, `${base}/level1`, `${base}/broken`, `${base}/go-metadata`], metadata: { source: 'site' } },
    });
    expect(urls.status).toBe(200);
    const urlDocs: { doc_id: string; source: { url: string } }[] = urls.body.data.documents;
    expect(urlDocs).toHaveLength(4);

    const markdown = Buffer.from('# Password help\n\nTo reset your password, open Settings, choose Security and press "Send reset link". The link expires after one hour.\n');
    const pdf = minimalPdf(['Warranty claims', 'Every Acme kettle carries a two year warranty.', 'Send warranty claims with the serial number to warranty@acme.example.']);
    const uploaded: string[] = [];
    for (const [body, type] of [[markdown, 'text/markdown'], [pdf, 'application/pdf']] as const) {
      const upload = await api('POST', '/api/v1/rag/uploads', { body: { content_type: type, size_bytes: body.length, filename: 'x' } });
      expect(upload.status).toBe(200);
      expect(upload.body.data.method).toBe('PUT');
      const put = await fetch(upload.body.data.upload_url, { method: 'PUT', headers: upload.body.data.headers, body });
      expect(put.status).toBe(200);
      const ingested = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId, upload_id: upload.body.data.upload_id } });
      expect(ingested.status).toBe(200);
      uploaded.push(ingested.body.data.documents[0].doc_id);
    }

    await local().platform.queue.waitForIdle(60_000);

    expect(await documentStatus(orgA(), 'opening-hours')).toMatchObject({ status: 'indexed', org_id: orgA(), kb_id: kbId, metadata: { source: 'faq' }, text: expect.stringContaining('Saturdays') });
    const byUrl = (suffix: string) => urlDocs.find((d) => d.source.url.endsWith(suffix))!.doc_id;
    const refunds = await documentStatus(orgA(), byUrl('/refunds'));
    expect(refunds.status).toBe('indexed');
    expect(refunds.text).toContain('within 30 days');
    expect(refunds.text).not.toContain('© Example'); // boilerplate dropped by the extractor
    expect((await documentStatus(orgA(), byUrl('/level1'))).status).toBe('indexed');
    const broken = await documentStatus(orgA(), byUrl('/broken'));
    expect(broken).toMatchObject({ status: 'failed', error: expect.stringContaining('500') });
    const refused = await documentStatus(orgA(), byUrl('/go-metadata'));
    expect(refused).toMatchObject({ status: 'failed', error: expect.stringContaining('169.254.169.254') });
    for (const id of uploaded) expect(await documentStatus(orgA(), id)).toMatchObject({ status: 'indexed', error: null });

    const list = await api('GET', `/api/v1/rag/documents?kb_id=${kbId}&limit=2`);
    expect(list.body.meta).toMatchObject({ total: 7, limit: 2, next_cursor: expect.any(String) });
    const kb = await api('GET', `/api/v1/rag/knowledge-bases/${kbId}`);
    expect(kb.body.data.document_count).toBe(7);
  });

  it.each([
    ['When is the shop open on Saturday?', 'opening-hours', 'Saturdays'],
    ['How many days do I have to ask for a refund?', '/refunds', 'within 30 days'],
    ['How long does shipping take?', '/level1', 'three to five days'],
    ['How do I reset my password?', 'markdown', 'Send reset link'],
    ['Where do I send a warranty claim?', 'pdf', 'serial number'],
  ])('answers "%s" with the right passage first', async (query, _doc, expected) => {
    const res = await api('POST', '/api/v1/rag/query', { body: { kb_id: kbId, query } });
    expect(res.status).toBe(200);
    const [first] = res.body.data.passages;
    expect(first.text).toContain(expected);
    expect(first).toEqual({ doc_id: expect.any(String), text: expect.any(String), score: expect.any(Number), metadata: expect.any(Object), chunk_index: 0 });
  });

  it('replaces a document on re-ingest and removes it from the index on delete', async () => {
    await api('POST', '/api/v1/rag/ingest', {
      body: { kb_id: kbId, doc_id: 'opening-hours', text: 'Opening hours changed: we now open every day including Sundays from 8am to 8pm.' },
    });
    await local().platform.queue.waitForIdle(30_000);
    const after = await api('POST', '/api/v1/rag/query', { body: { kb_id: kbId, query: 'opening hours Sundays', top_k: 10 } });
    const texts = after.body.data.passages.filter((p: any) => p.doc_id === 'opening-hours').map((p: any) => p.text);
    expect(texts).toEqual([expect.stringContaining('every day including Sundays')]);

    const del = await api('DELETE', `/api/v1/rag/document?org_id=${orgA()}&doc_id=opening-hours`);
    expect(del.body).toEqual({ success: true, message: 'Document deleted successfully' });
    const gone = await api('POST', '/api/v1/rag/query', { body: { kb_id: kbId, query: 'opening hours Sundays', top_k: 10 } });
    expect(gone.body.data.passages.some((p: any) => p.doc_id === 'opening-hours')).toBe(false);
    expect((await api('GET', `/api/v1/rag/document?org_id=${orgA()}&doc_id=opening-hours`)).status).toBe(404);
  });

  it('keeps organizations apart: another org_id or key is answered 404', async () => {
    const otherOrg = local().platform.keys[1]!.organizationId;
    expect((await api('GET', `/api/v1/rag/document?org_id=${otherOrg}&doc_id=anything`)).status).toBe(404);
    const listed = await api('GET', `/api/v1/rag/documents?kb_id=${kbId}`);
    const someDoc = listed.body.data[0].doc_id;
    expect((await api('GET', `/api/v1/rag/document?org_id=${orgA()}&doc_id=${someDoc}`, { key: keyB })).status).toBe(404);
    expect((await api('POST', '/api/v1/rag/query', { key: keyB, body: { kb_id: kbId, query: 'refund' } })).status).toBe(404);
  });

  it('validates ingest bodies', async () => {
    const none = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId } });
    expect(none.status).toBe(400);
    const two = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId, text: 'x', url: `${base}/` } });
    expect(two.status).toBe(400);
    const privateUrl = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId, url: 'http://169.254.169.254/' } });
    expect(privateUrl.status).toBe(400);
    expect(privateUrl.body.error.details.fields[0].path).toBe('url');
  });
});

describe('knowledge bases', () => {
  it('lists with document counts, is referenced by agents, and deletes with its documents and index', async () => {
    const kbId = await createKb('Temporary');
    await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId, text: 'Parking is free for customers behind the store.' } });
    await local().platform.queue.waitForIdle(30_000);
    const listed = await api('GET', '/api/v1/rag/knowledge-bases?limit=100');
    expect(listed.body.data.find((k: any) => k.id === kbId)).toMatchObject({ name: 'Temporary', document_count: 1 });
    expect(listed.body.meta.total).toBe(listed.body.data.length);

    const agent = await api('POST', '/api/v1/agents', { body: { name: 'With KB', knowledge_base: kbId } });
    expect(agent.status).toBe(200);
    const otherOrgKb = await api('POST', '/api/v1/agents', { key: keyB, body: { name: 'Other org', knowledge_base: kbId } });
    expect(otherOrgKb.status).toBe(400);

    expect((await api('DELETE', `/api/v1/rag/knowledge-bases/${kbId}`)).body).toEqual({ success: true, message: 'Knowledge base deleted successfully' });
    expect((await api('GET', `/api/v1/rag/knowledge-bases/${kbId}`)).status).toBe(404);
    expect((await api('POST', '/api/v1/rag/query', { body: { kb_id: kbId, query: 'parking' } })).status).toBe(404);
    // The kb-cleanup job clears agents' references (and removes documents and objects) in the background.
    await local().platform.queue.waitForIdle(30_000);
    expect((await api('GET', `/api/v1/agents/${agent.body.data.id}`)).body.data.knowledge_base).toBe('');
  });
});

/**
 * Black-box: the do-not-call list over real HTTP against the local runtime. Two organizations.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

describe('the do-not-call list', () => {
  it('stores every written form of a number once in E.164, and re-adding answers the existing entry', async () => {
    const first = await api('POST', '/api/v1/dnc', { body: { phone: '+1 (415) 555-0101', reason: 'asked not to be called', source: 'support' } });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ success: true, data: { phone: '+14155550101', reason: 'asked not to be called', source: 'support' } });
    expect(Date.parse(first.body.data.created_at)).not.toBeNaN();

    for (const body of [{ phone: '+14155550101' }, { phone: '415-555-0101', country: 'US' }, { phone: '+1.415.555.0101', reason: 'again' }]) {
      const again = await api('POST', '/api/v1/dnc/', { body });
      expect(again.status).toBe(200);
      expect(again.body.data).toEqual(first.body.data);
    }
    const listed = await api('GET', '/api/v1/dnc?phone=%2B14155550101');
    expect(listed.body.data).toEqual([first.body.data]);
    expect(listed.body.meta.total).toBe(1);
  });

  it('lists in number order with an exact total, pages, and filters by one number', async () => {
    for (const phone of ['+442079460958', '+14155550102', '+4930901820']) {
      expect((await api('POST', '/api/v1/dnc', { body: { phone } })).status).toBe(200);
    }
    const all = await api('GET', '/api/v1/dnc?limit=100');
    const phones = all.body.data.map((e: { phone: string }) => e.phone);
    expect(phones).toEqual([...phones].sort());
    expect(phones).toEqual(expect.arrayContaining(['+442079460958', '+14155550102', '+4930901820']));
    expect(all.body.meta).toMatchObject({ total: phones.length, next_cursor: null });

    const firstPage = await api('GET', '/api/v1/dnc?limit=1');
    expect(firstPage.body.data).toHaveLength(1);
    const nextPage = await api('GET', `/api/v1/dnc?limit=1&cursor=${encodeURIComponent(firstPage.body.meta.next_cursor)}`);
    expect(nextPage.body.data[0].phone).toBe(phones[1]);

    // A national number with its country, and a + typed unencoded (it arrives as a space).
    expect((await api('GET', '/api/v1/dnc?phone=020%207946%200958&country=GB')).body.data.map((e: any) => e.phone)).toEqual(['+442079460958']);
    expect((await api('GET', '/api/v1/dnc?phone=+14155550102')).body.meta.total).toBe(1);
    const none = await api('GET', '/api/v1/dnc?phone=%2B14155550199');
    expect(none.body).toMatchObject({ data: [], meta: { total: 0 } });
  });

  it('removes a number by its URL-encoded E.164 form; a second removal is 404', async () => {
    await api('POST', '/api/v1/dnc', { body: { phone: '+14155550103' } });
    const removed = await api('DELETE', '/api/v1/dnc/%2B14155550103');
    expect(removed.status).toBe(200);
    expect(removed.body).toEqual({ success: true, message: 'Number removed from the do-not-call list' });
    expect((await api('GET', '/api/v1/dnc?phone=%2B14155550103')).body.meta.total).toBe(0);
    const again = await api('DELETE', '/api/v1/dnc/%2B14155550103/');
    expect(again.status).toBe(404);
    expect(again.body.error.code).toBe('NOT_FOUND');
    // A + written literally in a path is a plus, not a space.
    await api('POST', '/api/v1/dnc', { body: { phone: '+14155550104' } });
    expect((await api('DELETE', '/api/v1/dnc/+14155550104')).status).toBe(200);
  });

  it.each([
    ['POST', '/api/v1/dnc', { phone: 'not a phone' }, 'phone'],
    ['POST', '/api/v1/dnc', { phone: '(415) 555-0105' }, 'phone'],
    ['POST', '/api/v1/dnc', {}, 'phone'],
    ['POST', '/api/v1/dnc', { phone: '+14155550105', colour: 'red' }, 'colour'],
    ['GET', '/api/v1/dnc?phone=garbage', undefined, 'phone'],
    ['DELETE', '/api/v1/dnc/garbage', undefined, 'phone'],
    ['DELETE', '/api/v1/dnc/4155550105', undefined, 'phone'],
    ['DELETE', '/api/v1/dnc/%2B1%20415%20555%200105', undefined, 'phone'],
  ])('%s %s with garbage is a 400 naming the field', async (method, path, body, field) => {
    const res = await api(method, path, body === undefined ? {} : { body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toContain(field);
  });

  it('keeps each organization\'s list its own: another organization sees nothing and gets 404', async () => {
    await api('POST', '/api/v1/dnc', { body: { phone: '+14155550106' } });
    const otherList = await api('GET', '/api/v1/dnc?limit=100', { key: keyB });
    expect(otherList.status).toBe(200);
    expect(otherList.body.data.map((e: { phone: string }) => e.phone)).not.toContain('+14155550106');
    expect((await api('GET', '/api/v1/dnc?phone=%2B14155550106', { key: keyB })).body.meta.total).toBe(0);
    expect((await api('DELETE', '/api/v1/dnc/%2B14155550106', { key: keyB })).status).toBe(404);
    // Still listed for its owner.
    expect((await api('GET', '/api/v1/dnc?phone=%2B14155550106')).body.meta.total).toBe(1);
    // B's own entry for the same number is B's alone.
    expect((await api('POST', '/api/v1/dnc', { key: keyB, body: { phone: '+14155550106', reason: 'B' } })).body.data.reason).toBe('B');
    expect((await api('GET', '/api/v1/dnc?phone=%2B14155550106')).body.data[0].reason).toBe('');
  });

  it('needs an API key', async () => {
    expect((await api('GET', '/api/v1/dnc', { key: null })).status).toBe(401);
  });
});

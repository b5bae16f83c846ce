import { v7 as uuidv7 } from 'uuid';
import { handler as addHandler } from '../../functions/dnc/add';
import { handler as listHandler } from '../../functions/dnc/list';
import { handler as removeHandler } from '../../functions/dnc/remove';
import { installLocalQueue } from '../../shared/adapters/queue';
import { collections, keys } from '../../shared/db/keys';
import { getItem, readCounter } from '../../shared/db/store';
import { createOrganizationWithKey } from '../../shared/domain/api-keys/provision';
import { AddDncBody, DncListQuery } from '../../shared/domain/dnc/schemas';
import { DNC_MESSAGES, addDncEntry, dialBlock, listDncEntries, removeDncEntry } from '../../shared/domain/dnc/service';
import { NotFoundError } from '../../shared/errors';
import { apiEvent, lambdaContext, parsed } from '../support/events';
import { rejection } from '../support/rejection';

/** A body as the HTTP layer hands it over (validated, defaults applied). */
const body = (over: Record<string, unknown>) => AddDncBody.parse(over);
const page = (over: Record<string, string> = {}) => DncListQuery.parse(over);

describe('the do-not-call list (service)', () => {
  it('stores any written form of a number once, in E.164, and answers the first entry when it is added again', async () => {
    const org = uuidv7();
    const first = await addDncEntry(org, body({ phone: '+1 (415) 555-0123', reason: 'asked on call', source: 'agent' }));
    expect(first).toEqual({ phone: '+14155550123', reason: 'asked on call', source: 'agent', created_at: expect.any(String) });
    const again = await addDncEntry(org, body({ phone: '415.555.0123', country: 'us', reason: 'another reason' }));
    expect(again).toEqual(first);
    expect(await readCounter(org, collections.dnc)).toBe(1);
    expect(await getItem(keys.dnc(org, '+14155550123'))).toMatchObject({ reason: 'asked on call' });
  });

  it('counts racing adds of one number once', async () => {
    const org = uuidv7();
    const answers = await Promise.all(Array.from({ length: 5 }, () => addDncEntry(org, body({ phone: '+442079460958' }))));
    expect(new Set(answers.map((a) => a.created_at)).size).toBe(1);
    expect(await readCounter(org, collections.dnc)).toBe(1);
  });

  it('lists in number order with an exact total and pages by cursor; the phone filter is one exact lookup', async () => {
    const org = uuidv7();
    for (const phone of ['+14155550125', '+14155550121', '+14155550123']) await addDncEntry(org, body({ phone }));
    const first = await listDncEntries(org, page({ limit: '2' }));
    expect(first.items.map((e) => e.phone)).toEqual(['+14155550121', '+14155550123']);
    expect(first.meta).toMatchObject({ total: 3, limit: 2, offset: 0, next_cursor: expect.any(String) });
    const second = await listDncEntries(org, page({ limit: '2', cursor: first.meta.next_cursor! }));
    expect(second.items.map((e) => e.phone)).toEqual(['+14155550125']);
    expect(second.meta.next_cursor).toBeNull();
    expect((await listDncEntries(org, page({ offset: '2' }))).items.map((e) => e.phone)).toEqual(['+14155550125']);

    const hit = await listDncEntries(org, page({ phone: '(415) 555-0123', country: 'US' }));
    expect(hit.items.map((e) => e.phone)).toEqual(['+14155550123']);
    expect(hit.meta).toMatchObject({ total: 1, next_cursor: null });
    // A `+` sent unencoded in a query string arrives as a space: still the same number.
    expect((await listDncEntries(org, page({ phone: ' 14155550123' }))).items).toHaveLength(1);
    const miss = await listDncEntries(org, page({ phone: '+14155550199' }));
    expect(miss.items).toEqual([]);
    expect(miss.meta.total).toBe(0);
  });

  it('removes a listed number (the count follows) and answers 404 for one that is not listed', async () => {
    const org = uuidv7();
    await addDncEntry(org, body({ phone: '+14155550123' }));
    await removeDncEntry(org, '+14155550123');
    expect(await getItem(keys.dnc(org, '+14155550123'))).toBeUndefined();
    expect(await readCounter(org, collections.dnc)).toBe(0);
    expect(await rejection(removeDncEntry(org, '+14155550123'))).toBeInstanceOf(NotFoundError);
    expect(await readCounter(org, collections.dnc)).toBe(0);
  });

  it('keeps every organization\'s list its own', async () => {
    const [a, b] = [uuidv7(), uuidv7()];
    await addDncEntry(a, body({ phone: '+14155550123' }));
    expect((await listDncEntries(b, page())).meta.total).toBe(0);
    expect((await listDncEntries(b, page({ phone: '+14155550123' }))).items).toEqual([]);
    expect(await rejection(removeDncEntry(b, '+14155550123'))).toBeInstanceOf(NotFoundError);
    expect(await dialBlock(b, '+14155550123')).toBeNull();
    expect(await dialBlock(a, '+14155550123')).toBe('do_not_call');
  });

  it('dialBlock: a contact\'s opt-out first, then the list, else null', async () => {
    const org = uuidv7();
    expect(await dialBlock(org, '+14155550123')).toBeNull();
    expect(await dialBlock(org, '+14155550123', { opt_out: false })).toBeNull();
    expect(await dialBlock(org, '+14155550123', null)).toBeNull();
    expect(await dialBlock(org, '+14155550123', { opt_out: true })).toBe('opt_out');
    await addDncEntry(org, body({ phone: '+14155550123' }));
    // Listed a moment ago: refused at once (a strongly consistent read).
    expect(await dialBlock(org, '+14155550123')).toBe('do_not_call');
    expect(await dialBlock(org, '+14155550123', { opt_out: true })).toBe('opt_out');
    expect(DNC_MESSAGES).toEqual({ do_not_call: 'on do-not-call list', opt_out: 'contact opted out' });
    await removeDncEntry(org, '+14155550123');
    expect(await dialBlock(org, '+14155550123')).toBeNull();
  });
});

describe('the do-not-call list (handlers)', () => {
  let key: string;
  beforeAll(async () => {
    installLocalQueue({ send: async () => {} }); // the key-usage stamp goes nowhere here
    ({ key } = await createOrganizationWithKey({ name: 'DNC handlers' }));
  });
  afterAll(() => installLocalQueue(undefined));

  const headers = () => ({ 'x-api-key': key, 'content-type': 'application/json' });
  const add = async (payload: unknown) => parsed(await addHandler(apiEvent({ method: 'POST', path: '/api/v1/dnc', headers: headers(), body: payload }), lambdaContext));
  const list = async (query: Record<string, string> = {}) => parsed(await listHandler(apiEvent({ path: '/api/v1/dnc', headers: headers(), query }), lambdaContext));
  const remove = async (phone: string) =>
    parsed(await removeHandler(apiEvent({ method: 'DELETE', path: `/api/v1/dnc/${phone}`, headers: headers(), pathParameters: { phone } }), lambdaContext));

  it('adds, lists, filters and removes through the middleware stack', async () => {
    const added = await add({ phone: '+1 415 555 0177', reason: 'complaint' });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ success: true, data: { phone: '+14155550177', reason: 'complaint', source: '' } });
    expect((await add({ phone: '+14155550177' })).body.data).toEqual(added.body.data);

    const listed = await list({ phone: '+14155550177' });
    expect(listed.body.data).toEqual([added.body.data]);
    expect(listed.body.meta).toMatchObject({ total: 1 });

    expect((await remove('%2B14155550177')).body).toEqual({ success: true, message: 'Number removed from the do-not-call list' });
    const gone = await remove('+14155550177');
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('NOT_FOUND');
  });

  it.each([
    ['a number that is not one', { phone: 'call me maybe' }],
    ['a national number without country', { phone: '(415) 555-0123' }],
    ['an impossible number', { phone: '+1 123' }],
    ['a bad country', { phone: '4155550123', country: 'USA' }],
    ['an unknown field', { phone: '+14155550123', note: 'x' }],
  ])('refuses %s with a 400 naming the field', async (_what, payload) => {
    const res = await add(payload);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    const expected = 'note' in payload ? 'note' : 'country' in payload ? 'country' : 'phone';
    expect(res.body.error.details.fields.map((f: { path: string }) => f.path)).toContain(expected);
  });

  it.each(['14155550123', '+1%20415', 'not-a-number', '+0123'])('refuses the path value %s with a 400', async (phone) => {
    const res = await remove(phone);
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields[0]).toMatchObject({ path: 'phone', in: 'path' });
  });

  it('refuses a garbage phone filter with a 400', async () => {
    const res = await list({ phone: 'abc' });
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields[0]).toMatchObject({ path: 'phone', in: 'query' });
  });
});

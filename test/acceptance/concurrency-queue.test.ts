/**
 * Black-box: `"queue": true` on POST /calls through the local runtime's HTTP API (docs/api.md,
 * "Concurrency limits"): at the limit a call waits (202, `queue_position`), is placed first in
 * first out when a slot frees, or ends `queue_timeout`. Calls go to numbers ending 7 with a ring of
 * 1,000 s: queue delays run 10 times faster here (the ring's 900 s cap → 90 s), so a live call stays
 * live until the test ends it, and nothing moves on its own while the test looks.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { callOf, endMove, moveCall } from '../../shared/domain/calls/lifecycle';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { setConcurrencyCeiling } from '../../shared/domain/concurrency/service';
import { keys } from '../../shared/db/keys';
import { transact } from '../../shared/db/store';
import { tableName } from '../../shared/db/client';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB], queueTimeScale: 0.1, env: { CONCURRENCY_CEILING: '20' } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const setUps = new Map<string, { agent: string; from: string }>();

async function setUp(key: string, area: string) {
  const [choice] = (await api('GET', `/api/v1/phone-numbers/available?area_code=${area}&limit=1`, { key })).body.data;
  expect((await api('POST', '/api/v1/phone-numbers/buy', { key, body: { phone_number: choice.phone_number, price: choice.price } })).status).toBe(200);
  const agent = await api('POST', '/api/v1/agents', { key, body: { name: 'Caller', begin_message: 'Hello.', ring_duration_ms: 1_000_000 } });
  setUps.set(key, { agent: agent.body.data.id, from: choice.phone_number });
  expect((await api('PATCH', '/api/v1/concurrency', { key, body: { limit: 2 } })).status).toBe(200);
}

beforeAll(async () => {
  await setUp(keyA, '212');
  await setUp(keyB, '415');
});

let n = 0;
const place = (key: string, extra: Record<string, unknown> = {}) => {
  const { agent, from } = setUps.get(key)!;
  return api('POST', '/api/v1/calls', { key, body: { agent_id: agent, from_phone_number: from, to_phone_number: `+1415555${100 + n++}7`, ...extra } });
};
const concurrency = async (key = keyA) => (await api('GET', '/api/v1/concurrency', { key })).body.data;
const call = async (id: string, key = keyA) => (await api('GET', `/api/v1/calls/${id}`, { key })).body.data;
const end = async (id: string, orgId: string) => moveCall((await callOf(orgId, id))!, endMove('canceled'), { at: new Date().toISOString() });
const dialed = (id: string) => until(async () => (await callOf(orgOf(id), id))!, (c) => !!c.dial_claimed_at, `call ${id} dialed`);
const orgs = new Map<string, string>();
const orgOf = (id: string) => orgs.get(id)!;

describe('POST /calls with "queue": true', () => {
  const live: string[] = [];
  const waiting: string[] = [];

  it('takes a free slot at once (200, no queue_position) and validates queue and queue_timeout_seconds', async () => {
    const badQueue = await place(keyA, { queue: 'yes' });
    expect(badQueue.status).toBe(400);
    expect(badQueue.body.error.details.fields[0].path).toBe('queue');
    for (const timeout of [0, 3601, 1.5]) {
      const bad = await place(keyA, { queue: true, queue_timeout_seconds: timeout });
      expect(bad.status).toBe(400);
      expect(bad.body.error.details.fields[0].path).toBe('queue_timeout_seconds');
    }
    for (let i = 0; i < 2; i++) {
      const r = await place(keyA, { queue: true });
      expect(r.status).toBe(200);
      expect(r.body.data.queue_position).toBeUndefined();
      live.push(r.body.data.id);
      orgs.set(r.body.data.id, r.body.data.organization_id);
    }
    expect(await concurrency()).toMatchObject({ limit: 2, in_progress: { total: 2 }, queued: 0 });
    // Without `queue`, the limit still answers 429 and writes nothing.
    const refused = await place(keyA);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('CONCURRENCY_LIMIT');
  }, 30_000);

  it('at the limit answers 202 with the call queued and its position, 1, 2, 3', async () => {
    for (const position of [1, 2, 3]) {
      const r = await place(keyA, { queue: true, queue_timeout_seconds: position === 3 ? 60 : 3600 });
      expect(r.status).toBe(202);
      expect(r.body.data).toMatchObject({ status: 'queued', queue_position: position, started_at: null });
      waiting.push(r.body.data.id);
      orgs.set(r.body.data.id, r.body.data.organization_id);
    }
    expect(await concurrency()).toMatchObject({ in_progress: { total: 2 }, queued: 3 });
    expect((await call(waiting[1]!)).queue_position).toBe(2);
    // call.queued for each, as it waits.
    const events = (await api('GET', '/api/v1/events?type=call.queued&limit=10')).body.data;
    expect(events.map((e: { data: { id: string } }) => e.data.id).sort()).toEqual([...waiting].sort());
  }, 30_000);

  it('keeps each organization\'s queue its own', async () => {
    const other = [await place(keyB, { queue: true }), await place(keyB, { queue: true }), await place(keyB, { queue: true })];
    expect(other.map((r) => r.status)).toEqual([200, 200, 202]);
    expect(other[2]!.body.data.queue_position).toBe(1);
    expect(await concurrency(keyB)).toMatchObject({ in_progress: { total: 2 }, queued: 1 });
    expect((await call(waiting[0]!)).queue_position).toBe(1);
    // Organization B's ends place B's waiting call, never A's.
    for (const r of other.slice(0, 2)) orgs.set(r.body.data.id, r.body.data.organization_id);
    orgs.set(other[2]!.body.data.id, other[2]!.body.data.organization_id);
    await end(other[0]!.body.data.id, orgOf(other[0]!.body.data.id));
    await dialed(other[2]!.body.data.id);
    expect(await concurrency(keyB)).toMatchObject({ in_progress: { total: 2 }, queued: 0 });
    expect(await concurrency()).toMatchObject({ in_progress: { total: 2 }, queued: 3 });
    expect((await call(waiting[0]!)).queue_position).toBe(1);
  }, 30_000);

  it('places the first waiting call when a slot frees (FIFO), the others move up, and never more live calls than the limit', async () => {
    await end(live[0]!, orgOf(live[0]!));
    await dialed(waiting[0]!);
    const placed = await call(waiting[0]!);
    expect(placed.status).not.toBe('ended');
    expect(placed.queue_position).toBeUndefined();
    expect((await call(waiting[1]!)).queue_position).toBe(1);
    expect((await call(waiting[2]!)).queue_position).toBe(2);
    expect(await concurrency()).toMatchObject({ in_progress: { total: 2 }, queued: 2 });
    // Two slots freed at once: the next two in line, in order, and the count stays at the limit.
    await Promise.all([end(live[1]!, orgOf(live[1]!)), end(waiting[0]!, orgOf(waiting[0]!))]);
    await dialed(waiting[1]!);
    await dialed(waiting[2]!);
    expect(await concurrency()).toMatchObject({ in_progress: { total: 2 }, queued: 0 });
  }, 30_000);

  it('ends a waiting call `queue_timeout` at its deadline (the recovery sweep) and frees its place', async () => {
    const r = await place(keyA, { queue: true, queue_timeout_seconds: 30 });
    expect(r.status).toBe(202);
    const id = r.body.data.id;
    expect(r.body.data.queue_position).toBe(1);
    // Before the deadline the sweep leaves it waiting (no slot is free).
    await runCallRecovery({ now: new Date(Date.now() + 10_000), lookbackHours: 1 });
    expect((await call(id)).status).toBe('queued');
    await runCallRecovery({ now: new Date(Date.now() + 31_000), lookbackHours: 1 });
    const ended = await call(id);
    expect(ended).toMatchObject({ status: 'ended', disconnection_reason: 'queue_timeout', started_at: null, duration_sec: 0 });
    expect(ended.queue_position).toBeUndefined();
    expect(ended.error_message).toMatch(/queue timeout/);
    expect(await concurrency()).toMatchObject({ in_progress: { total: 2 }, queued: 0 });
  }, 30_000);

  it('a higher limit places waiting calls at once; a placement that was lost, the recovery sweep makes', async () => {
    const first = await place(keyA, { queue: true });
    const second = await place(keyA, { queue: true });
    expect([first.status, second.status]).toEqual([202, 202]);
    for (const r of [first, second]) orgs.set(r.body.data.id, r.body.data.organization_id);
    expect((await api('PATCH', '/api/v1/concurrency', { body: { limit: 3 } })).body.data).toMatchObject({ limit: 3, in_progress: { total: 3 }, queued: 1 });
    await dialed(first.body.data.id);
    expect((await call(second.body.data.id)).queue_position).toBe(1);
    // A slot opened with no promotion after it (as if the process died between a release and its placement).
    const orgId = orgOf(second.body.data.id);
    await transact([{ Update: { TableName: tableName(), Key: keys.concurrency(orgId), UpdateExpression: 'SET #limit = :four', ExpressionAttributeNames: { '#limit': 'limit' }, ExpressionAttributeValues: { ':four': 4 } } }]);
    expect((await call(second.body.data.id)).status).toBe('queued');
    await runCallRecovery({ now: new Date(Date.now() + 61_000), lookbackHours: 1 });
    await dialed(second.body.data.id);
    expect(await concurrency()).toMatchObject({ limit: 4, in_progress: { total: 4 }, queued: 0 });
  }, 30_000);

  it('the operator raising a ceiling places waiting calls at once (a limit left at the default follows the ceiling)', async () => {
    const orgId = (await api('GET', '/api/v1/calls?limit=1')).body.data[0].organization_id;
    const live = (await concurrency()).in_progress.total;
    // The default limit (the ceiling), set by the operator to the calls live now: the next call waits.
    expect(await setConcurrencyCeiling(orgId, live)).toMatchObject({ ceiling: live });
    await transact([{ Update: { TableName: tableName(), Key: keys.concurrency(orgId), UpdateExpression: 'REMOVE #limit', ExpressionAttributeNames: { '#limit': 'limit' } } }]);
    const waiting = await place(keyA, { queue: true });
    expect(waiting.status).toBe(202);
    orgs.set(waiting.body.data.id, orgId);
    expect(await setConcurrencyCeiling(orgId, live + 1)).toMatchObject({ limit: live + 1, ceiling: live + 1 });
    // Placed by the command itself, not the sweep.
    await dialed(waiting.body.data.id);
    expect(await concurrency()).toMatchObject({ in_progress: { total: live + 1 }, queued: 0 });
    await setConcurrencyCeiling(orgId, undefined);
  }, 30_000);

  it('never places a waiting call past its deadline: a freed slot ends it `queue_timeout` and goes to the next in line', async () => {
    const orgId = (await api('GET', '/api/v1/calls?limit=1')).body.data[0].organization_id;
    const live = (await concurrency()).in_progress.total;
    expect((await api('PATCH', '/api/v1/concurrency', { body: { limit: live } })).status).toBe(200);
    const late = await place(keyA, { queue: true });
    const next = await place(keyA, { queue: true });
    expect([late.status, next.status]).toEqual([202, 202]);
    orgs.set(next.body.data.id, orgId);
    // Its deadline passes before any sweep comes by.
    const past = new Date(Date.now() - 1000).toISOString();
    await transact([{ Update: { TableName: tableName(), Key: keys.call(orgId, late.body.data.id), UpdateExpression: 'SET waiting_until = :past', ExpressionAttributeValues: { ':past': past } } }]);
    const holder = (await api('GET', '/api/v1/calls?limit=100')).body.data.find((c: any) => c.status !== 'ended' && c.queue_position === undefined && c.organization_id === orgId);
    await end(holder.id, orgId);
    await dialed(next.body.data.id);
    expect(await call(late.body.data.id)).toMatchObject({ status: 'ended', disconnection_reason: 'queue_timeout', started_at: null });
    expect(await concurrency()).toMatchObject({ in_progress: { total: live }, queued: 0 });
  }, 30_000);
});

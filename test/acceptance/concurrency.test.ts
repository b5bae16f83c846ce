/**
 * Black-box: the organization's concurrency limit through the local runtime's HTTP API (docs/api.md,
 * "Concurrency limits"). Calls go to numbers ending 7 (the simulated carrier rings them out after the
 * agent's ring_duration_ms: no conversation); queue delays run 100 times faster, so a call lives
 * about 2 s here.
 */
import { randomUUID } from 'node:crypto';
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { callOf, endMove, moveCall } from '../../shared/domain/calls/lifecycle';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { acquireSlotWrites } from '../../shared/domain/concurrency/slots';
import { setConcurrencyCeiling } from '../../shared/domain/concurrency/service';
import { transact } from '../../shared/db/store';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB], env: { CONCURRENCY_CEILING: '20' } });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

let agentA: string;
let fromA: string;
let agentB: string;
let fromB: string;

async function setUp(key: string, area: string) {
  const [choice] = (await api('GET', `/api/v1/phone-numbers/available?area_code=${area}&limit=1`, { key })).body.data;
  expect((await api('POST', '/api/v1/phone-numbers/buy', { key, body: { phone_number: choice.phone_number, price: choice.price } })).status).toBe(200);
  const agent = await api('POST', '/api/v1/agents', { key, body: { name: 'Caller', begin_message: 'Hello.', ring_duration_ms: 200_000 } });
  return { agent: agent.body.data.id as string, from: choice.phone_number as string };
}

beforeAll(async () => {
  ({ agent: agentA, from: fromA } = await setUp(keyA, '212'));
  ({ agent: agentB, from: fromB } = await setUp(keyB, '415'));
});

const place = (key: string, agent: string, from: string, i: number) =>
  api('POST', '/api/v1/calls', { key, body: { agent_id: agent, from_phone_number: from, to_phone_number: `+1415555${100 + i}7` } });
const concurrency = async (key = keyA) => (await api('GET', '/api/v1/concurrency', { key })).body.data;
const idle = (key = keyA) => until(() => concurrency(key), (c) => c.in_progress.total === 0, 'every slot freed');

describe('concurrency limits', () => {
  it('reads the default limit and ceiling, and takes a limit of 1 … ceiling', async () => {
    expect(await concurrency()).toEqual({ limit: 20, ceiling: 20, in_progress: { outbound: 0, inbound: 0, web: 0, total: 0 }, queued: 0 });
    const zero = await api('PATCH', '/api/v1/concurrency', { body: { limit: 0 } });
    expect(zero.status).toBe(400);
    expect(zero.body.error.details.fields[0].path).toBe('limit');
    const above = await api('PATCH', '/api/v1/concurrency', { body: { limit: 21 } });
    expect(above.status).toBe(422);
    expect(above.body.error).toMatchObject({ code: 'UNPROCESSABLE', details: { limit: 21, ceiling: 20 } });
    expect(above.body.error.message).toMatch(/ceiling of 20/);
    const set = await api('PATCH', '/api/v1/concurrency', { body: { limit: 3 } });
    expect(set.status).toBe(200);
    expect(set.body.data).toMatchObject({ limit: 3, ceiling: 20 });
  });

  it('never lets more calls start than the limit when many race, answers the rest 429 with Retry-After, and frees every slot as the calls end', async () => {
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => place(keyA, agentA, fromA, i)));
    const placed = replies.filter((r) => r.status === 200);
    const refused = replies.filter((r) => r.status === 429);
    expect(placed).toHaveLength(3);
    expect(refused).toHaveLength(9);
    for (const r of refused) {
      expect(r.body.error).toMatchObject({ code: 'CONCURRENCY_LIMIT', details: { limit: 3, in_progress: 3 } });
      expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect((await concurrency()).in_progress).toEqual({ outbound: 3, inbound: 0, web: 0, total: 3 });
    // Nothing was written for a refusal: the organization has the three calls only.
    expect((await api('GET', '/api/v1/calls?limit=100')).body.meta.total).toBe(3);

    // Tenant isolation: another organization's calls never use these slots.
    const other = await place(keyB, agentB, fromB, 1);
    expect(other.status).toBe(200);
    expect((await concurrency(keyB)).in_progress.total).toBe(1);
    expect((await concurrency()).in_progress.total).toBe(3);

    await idle();
    await idle(keyB);
    for (const r of placed) expect((await api('GET', `/api/v1/calls/${r.body.data.id}`)).body.data.status).toBe('ended');
    // A slot freed is free again.
    expect((await place(keyA, agentA, fromA, 50)).status).toBe(200);
    await idle();
  }, 40_000);

  it('frees a slot exactly once when every end path races for the same call', async () => {
    const created = await place(keyA, agentA, fromA, 60);
    expect(created.status).toBe(200);
    const { id, organization_id: orgId } = created.body.data;
    const item = (await callOf(orgId, id))!;
    // The carrier's own course runs meanwhile; three platform ends race it and each other.
    const ends = await Promise.all([
      moveCall(item, endMove('canceled'), { at: new Date().toISOString() }),
      moveCall(item, endMove('failed'), { at: new Date().toISOString() }),
      moveCall(item, { status: 'ended', rank: 3, reason: 'completed', answered: false }, { at: new Date().toISOString() }),
    ]);
    expect(ends.filter((e) => e.moved)).toHaveLength(1);
    await idle();
    // Settled: never below zero (a double free would leave -1 after the last call ended).
    await new Promise((r) => setTimeout(r, 300));
    expect((await concurrency()).in_progress).toEqual({ outbound: 0, inbound: 0, web: 0, total: 0 });
  }, 30_000);

  it('the recovery sweep frees a slot whose holder crashed before its call was written, once', async () => {
    const orgId = (await api('GET', '/api/v1/calls?limit=1')).body.data[0].organization_id;
    const past = new Date(Date.now() - 3_600_000).toISOString();
    await transact(acquireSlotWrites(orgId, randomUUID(), 'outbound', past, past));
    expect((await concurrency()).in_progress.total).toBe(1);
    const [first, second] = await Promise.all([runCallRecovery({ lookbackHours: 3 }), runCallRecovery({ lookbackHours: 3 })]);
    expect(first.slotsRecovered + second.slotsRecovered).toBe(1);
    expect((await concurrency()).in_progress.total).toBe(0);
  }, 30_000);

  it('the operator\'s ceiling per organization (the admin command) lowers a limit above it; default goes back to CONCURRENCY_CEILING', async () => {
    const orgId = (await api('GET', '/api/v1/calls?limit=1')).body.data[0].organization_id;
    expect(await setConcurrencyCeiling(orgId, 2)).toMatchObject({ limit: 2, ceiling: 2 });
    expect((await api('PATCH', '/api/v1/concurrency', { body: { limit: 3 } })).body.error.details).toEqual({ limit: 3, ceiling: 2 });
    expect(await setConcurrencyCeiling(orgId, undefined)).toMatchObject({ limit: 2, ceiling: 20 });
    expect((await concurrency(keyB)).limit).toBe(20);
  });
});

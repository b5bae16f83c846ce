import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue } from '../../shared/adapters/queue';
import { resetTelephony } from '../../shared/adapters/telephony';
import { keys } from '../../shared/db/keys';
import { putNew, transact } from '../../shared/db/store';
import { createAgent } from '../../shared/domain/agents/service';
import { chargesTotal, chargeWrite, listCharges, toUnits, unitsToDecimal } from '../../shared/domain/billing/service';
import { handleCallEventMessage } from '../../shared/domain/calls/carrier-events';
import { placeQueuedCall, type CallEventMessage } from '../../shared/domain/calls/lifecycle';
import { CreateCallBody } from '../../shared/domain/calls/schemas';
import { createCall } from '../../shared/domain/calls/service';
import { createOrganizationWithKey } from '../../shared/domain/api-keys/provision';
import { handler as getTotal } from '../../functions/billing/get-total';
import { handler as listChargesHandler } from '../../functions/billing/list-charges';
import { logger } from '../../shared/logger';
import { apiEvent, lambdaContext, parsed } from '../support/events';
import { buyFromPool } from '../support/numbers';

logger.setLogLevel('SILENT');

/** Charges keep the carrier's precision (1/10,000 USD) and the ledger's sums are exact. */
const sent: { queue: string; body: any }[] = [];
beforeAll(() => installLocalQueue({ send: async (queue, body) => void sent.push({ queue, body }) }));
afterAll(() => installLocalQueue(undefined));
beforeEach(() => {
  delete process.env.SIMULATED_CARRIER_FAIL;
  process.env.TELEPHONY_PROVIDER = 'simulated';
  resetTelephony();
});

const buyNumber = (org: string) => buyFromPool(org, '206');

/** 1,000 one-minute call charges at 0.014 USD, written 50 to a transaction. */
async function thousandCallCharges(org: string, at: string) {
  for (let batch = 0; batch < 20; batch++) {
    const writes = Array.from({ length: 50 }, (_, i) => chargeWrite(org, {
      amount: 1 * 0.014, reason: 'call_minutes', description: `call ${batch * 50 + i}`, resourceType: 'call', resourceId: uuidv7(), at,
    }));
    await transact(writes.map((w) => w.item), [{ orgId: org, collection: 'charges', delta: writes.length }]);
  }
}

describe('money to the carrier\'s precision', () => {
  it('converts amounts to integer units of 1/10,000 exactly and back', () => {
    expect([0.014, 1.15, 0.0085, 0.1 + 0.2, 1000 * 0.014, 0.01234, 0.00005].map(toUnits)).toEqual([140, 11500, 85, 3000, 140000, 123, 1]);
    expect([unitsToDecimal(140, 4), unitsToDecimal(140000, 4), unitsToDecimal(115, 2), unitsToDecimal(-5, 4), unitsToDecimal(7n, 0)]).toEqual(['0.0140', '14.0000', '1.15', '-0.0005', '7']);
  });

  it('charges a one-minute call at 0.014 USD/min 0.014 (140 units of 1/10,000), not 0.01', async () => {
    // Prepare
    const org = uuidv7();
    const { number, choice } = await buyNumber(org);
    expect(choice.per_minute_price_outbound).toBe(0.014);
    const agent = await createAgent(org, { name: 'Caller', begin_message: 'Hello' } as never);
    const call = await createCall(org, CreateCallBody.parse({ agent_id: agent.id, from_phone_number: number.phone_number, to_phone_number: '+14155550131' }));
    // Act: the simulated carrier answers and ends after 3 s (one started minute)
    await placeQueuedCall(org, call.id);
    for (const m of sent.filter((s) => s.queue === 'call-events' && s.body.call_id === call.id)) await handleCallEventMessage(m.body as CallEventMessage);
    // Assess
    const { items } = await listCharges(org, { limit: 10, offset: 0 });
    const minutes = items.find((c) => c.reason === 'call_minutes');
    expect(minutes).toMatchObject({ resource_id: call.id, amount: 0.014, amount_units: 140, amount_scale: 4, currency: 'USD' });
    expect(minutes).not.toHaveProperty('amount_cents');
    expect(items.find((c) => c.reason === 'number_purchase')).toMatchObject({ amount: 1.15, amount_units: 11500, amount_scale: 4 });
  });

  it('totals 1,000 one-minute calls at 0.014 USD exactly 14.0000, through GET /billing/total', async () => {
    // Prepare
    const { organization, key } = await createOrganizationWithKey({ name: 'Ledger' });
    const org = organization.id;
    await thousandCallCharges(org, '2031-05-10T12:00:00.000Z');
    // Act
    const res = parsed(await getTotal(apiEvent({ path: '/api/v1/billing/total', headers: { 'x-api-key': key } }), lambdaContext));
    // Assess
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      totals: [{ currency: 'USD', amount: 14, amount_decimal: '14.0000', amount_units: 140000, amount_scale: 4, charges: 1000 }],
      from: null, to: null,
    });
    // The float sum of the amounts is not exact; the units are.
    const { items } = await listCharges(org, { limit: 100, offset: 0 });
    expect(items.reduce((sum, c) => sum + c.amount_units, 0)).toBe(100 * 140);
  });

  it('reads charges written in cents before (no scale) as they were, and adds them exactly', async () => {
    // Prepare: an old item, as chargeWrite stored it before charges kept 1/10,000
    const { organization, key } = await createOrganizationWithKey({ name: 'Old ledger' });
    const org = organization.id;
    const old = {
      id: uuidv7(), organization_id: org, amount: 1.15, amount_cents: 115, currency: 'USD', reason: 'number_purchase',
      description: 'Phone number +12065550100, first month', resource_type: 'phone_number', resource_id: uuidv7(), created_at: '2031-04-01T00:00:00.000Z',
    };
    await transact([putNew({ ...keys.charge(org, old.id), entity: 'CHARGE', ...old })], [{ orgId: org, collection: 'charges', delta: 1 }]);
    const fresh = chargeWrite(org, { amount: 0.0158, reason: 'call_minutes', description: 'one minute to the UK', resourceType: 'call', resourceId: uuidv7(), at: '2031-05-01T00:00:00.000Z' });
    await transact([fresh.item], [fresh.counter]);
    // Act
    const res = parsed(await listChargesHandler(apiEvent({ path: '/api/v1/billing/charges', headers: { 'x-api-key': key } }), lambdaContext));
    const all = await chargesTotal(org, {});
    const may = await chargesTotal(org, { from: '2031-05-01T00:00:00.000Z', to: '2031-06-01T00:00:00.000Z' });
    const april = await chargesTotal(org, { to: '2031-05-01T00:00:00.000Z' });
    // Assess
    const items = res.body.data;
    const { amount_cents: _cents, ...oldView } = old;
    expect(items[0]).toEqual({ ...oldView, amount: 1.15, amount_units: 115, amount_scale: 2 });
    expect(items[1]).toMatchObject({ amount: 0.0158, amount_units: 158, amount_scale: 4 });
    expect(all.totals).toEqual([{ currency: 'USD', amount: 1.1658, amount_decimal: '1.1658', amount_units: 11658, amount_scale: 4, charges: 2 }]);
    expect(may.totals[0]).toMatchObject({ amount_decimal: '0.0158', charges: 1 });
    expect(april.totals[0]).toMatchObject({ amount_decimal: '1.1500', amount_units: 11500, amount_scale: 4, charges: 1 }); // totals at scale 4
  });

  it('refuses a total range that is not an ISO time, naming the field', async () => {
    const { key } = await createOrganizationWithKey({ name: 'Bad range' });
    const res = parsed(await getTotal(apiEvent({ path: '/api/v1/billing/total', headers: { 'x-api-key': key }, query: { from: 'yesterday' } }), lambdaContext));
    expect(res.status).toBe(400);
    expect(JSON.stringify(res.body.error)).toContain('from');
  });
});

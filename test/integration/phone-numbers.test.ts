import { v7 as uuidv7 } from 'uuid';
import { resetTelephony } from '../../shared/adapters/telephony';
import { createAgent } from '../../shared/domain/agents/service';
import { listCharges } from '../../shared/domain/billing/service';
import { BuyBody, ImportBody } from '../../shared/domain/phone-numbers/schemas';
import {
  buyPhoneNumber,
  getPhoneNumber,
  importPhoneNumber,
  listAvailablePhoneNumbers,
  listPhoneNumbers,
  releasePhoneNumber,
  updateImportedPhoneNumber,
  updatePhoneNumber,
} from '../../shared/domain/phone-numbers/service';
import { keys } from '../../shared/db/keys';
import { getItem, transact, updateExisting } from '../../shared/db/store';
import { AppError, ConflictError, NotFoundError, UnavailableError, UnprocessableError, ValidationError } from '../../shared/errors';
import { logger } from '../../shared/logger';
import { rejection } from '../support/rejection';
import { asFunction } from '../support/access';

logger.setLogLevel('SILENT');

const page = { limit: 100, offset: 0 };


/** The first available number of an area, as listed. */
async function listed(areaCode: string, country = 'US') {
  const { items } = await asFunction('listAvailablePhoneNumbers', () => listAvailablePhoneNumbers('any', { country, area_code: areaCode, limit: 5 }));
  expect(items.length).toBeGreaterThan(0);
  return items[0];
}

const buy = (orgId: string, n: { phone_number: string; price: number }) =>
  asFunction('buyPhoneNumber', () => buyPhoneNumber(orgId, BuyBody.parse({ phone_number: n.phone_number, price: n.price })));
const release = (orgId: string, id: string) => asFunction('releasePhoneNumber', () => releasePhoneNumber(orgId, id));
const importNumber = (orgId: string, body: Record<string, unknown>) => asFunction('importPhoneNumber', () => importPhoneNumber(orgId, ImportBody.parse(body)));

beforeEach(() => {
  delete process.env.SIMULATED_CARRIER_FAIL;
  delete process.env.TELEPHONY_PROVIDER;
  resetTelephony();
});

describe('buying numbers', () => {
  it('lists numbers of an area, buys one at its price, charges once in the same write, and takes it out of the pool', async () => {
    // Prepare
    const org = uuidv7();
    const { items: before } = await listAvailablePhoneNumbers(org, { country: 'US', area_code: '415', limit: 20 });
    expect(before).toHaveLength(20);
    expect(before.every((n) => n.phone_number.startsWith('+1415') && n.locality === 'San Francisco')).toBe(true);
    const choice = before[3];
    // Act
    const bought = await buy(org, choice);
    // Assess
    expect(bought).toMatchObject({
      id: expect.any(String), source: 'purchased', phone_number: choice.phone_number, price: choice.price,
      status: 'active', purchased_at: expect.any(String), inbound_agent_id: null, released_at: null,
    });
    const { items: after } = await listAvailablePhoneNumbers(org, { country: 'US', area_code: '415', limit: 100 });
    expect(after.map((n) => n.phone_number)).not.toContain(choice.phone_number);
    const charges = await listCharges(org, page);
    expect(charges.meta.total).toBe(1);
    expect(charges.items[0]).toMatchObject({
      amount: choice.price, amount_units: Math.round(choice.price * 10_000), amount_scale: 4, currency: 'USD', reason: 'number_purchase',
      resource_type: 'phone_number', resource_id: bought.id, phone_number: choice.phone_number,
    });
    expect(await getItem(keys.numberClaim(choice.phone_number))).toMatchObject({ organization_id: org, phone_number_id: bought.id });
  });

  it('lets exactly one of many racing buyers of one number own it and be charged', async () => {
    // Prepare
    const choice = await listed('212');
    const orgs = Array.from({ length: 4 }, () => uuidv7());
    // Act
    const results = await Promise.allSettled(orgs.flatMap((org) => [buy(org, choice), buy(org, choice)]));
    // Assess
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    for (const r of results.filter((r) => r.status === 'rejected')) {
      expect([409, 422]).toContain(((r as PromiseRejectedResult).reason as AppError).statusCode);
    }
    const charges = await Promise.all(orgs.map((org) => listCharges(org, page)));
    expect(charges.reduce((sum, c) => sum + c.meta.total, 0)).toBe(1);
    const held = await Promise.all(orgs.map((org) => listPhoneNumbers(org, page)));
    expect(held.reduce((sum, l) => sum + l.items.length, 0)).toBe(1);
  });

  it('refuses a price that is not the listed one, and a number that is not offered, with 422 and no charge', async () => {
    const org = uuidv7();
    const choice = await listed('312');
    const wrongPrice = await rejection(buy(org, { ...choice, price: choice.price + 1 }));
    expect(wrongPrice).toBeInstanceOf(UnprocessableError);
    expect(wrongPrice.details).toMatchObject({ fields: [{ path: 'price', message: `does not match the listed ${choice.price}` }], listed: { price: choice.price } });
    const wrongPerMinute = await rejection(buyPhoneNumber(org, BuyBody.parse({ phone_number: choice.phone_number, price: choice.price, per_minute_price_inbound: choice.per_minute_price_inbound, per_minute_price_outbound: 1 })));
    expect(wrongPerMinute.details).toMatchObject({ fields: [{ path: 'per_minute_price_outbound', message: expect.stringMatching(/^does not match the listed /) }] });
    const notOffered = await rejection(buy(org, { phone_number: '+14155550123', price: 1.15 }));
    expect(notOffered).toBeInstanceOf(UnprocessableError);
    expect((await listCharges(org, page)).meta.total).toBe(0);
  });

  it('charges nothing when the carrier fails or refuses', async () => {
    const org = uuidv7();
    const choice = await listed('512');
    process.env.SIMULATED_CARRIER_FAIL = 'purchase';
    expect(await rejection(buy(org, choice))).toBeInstanceOf(UnavailableError);
    process.env.SIMULATED_CARRIER_FAIL = `purchase:${choice.phone_number}`;
    expect(await rejection(buy(org, choice))).toBeInstanceOf(UnprocessableError);
    process.env.SIMULATED_CARRIER_FAIL = 'search';
    expect(await rejection(listAvailablePhoneNumbers(org, { country: 'US', limit: 5 }))).toBeInstanceOf(UnavailableError);
    expect((await listCharges(org, page)).meta.total).toBe(0);
    expect((await listPhoneNumbers(org, page)).meta.total).toBe(0);
  });

  it('gives the number back to the carrier when it cannot be recorded (someone imported it meanwhile)', async () => {
    const choice = await listed('404');
    const importer = uuidv7();
    await importNumber(importer, { phone: choice.phone_number, type: 'pstn' });
    const buyer = uuidv7();
    expect(await rejection(buy(buyer, choice))).toBeInstanceOf(ConflictError);
    expect((await listCharges(buyer, page)).meta.total).toBe(0);
    // Still offered by the carrier: the compensation released it.
    expect(await getItem(keys.simulatedCarrierNumber('US', choice.phone_number))).toBeUndefined();
  });
});

describe('importing numbers', () => {
  it('holds a number once: a second import by anyone is a 409', async () => {
    const [a, b] = [uuidv7(), uuidv7()];
    const imported = await importNumber(a, { phone: '+1 (617) 555-0142', type: 'sip', name: 'Support line', termination_uri: 'sip:trunk.example.com' });
    expect(imported).toMatchObject({ source: 'imported', phone: '+16175550142', phone_number: '+16175550142', type: 'sip', name: 'Support line', status: 'active' });
    expect(await rejection(importNumber(b, { phone: '+16175550142', type: 'pstn' }))).toBeInstanceOf(ConflictError);
    expect(await rejection(importNumber(a, { phone: '+16175550142', type: 'sip' }))).toBeInstanceOf(ConflictError);
    const racing = await Promise.allSettled([uuidv7(), uuidv7(), uuidv7()].map((org) => importNumber(org, { phone: '+16175550143', type: 'pstn' })));
    expect(racing.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('stores sip_password sealed, returns it as sent, and PUT replaces only the fields given', async () => {
    // Prepare
    const org = uuidv7();
    const password = 'pl41n-text-S3cret!';
    // Act
    const imported = await importNumber(org, { phone: '+442079460958', type: 'sip', sip_username: 'trunk-user', sip_password: password });
    // Assess
    expect(imported.sip_password).toBe(password);
    const raw = await getItem<Record<string, unknown>>(keys.phoneNumber(org, imported.id));
    expect(JSON.stringify(raw)).not.toContain(password);
    expect(raw!.sip_password).toBeUndefined();
    expect(String(raw!.sip_password_sealed)).toMatch(/^v1:local:/);
    expect((await getPhoneNumber(org, imported.id)).sip_password).toBe(password);

    const renamed = await updateImportedPhoneNumber(org, imported.id, { name: 'London office' });
    expect(renamed).toMatchObject({ name: 'London office', sip_username: 'trunk-user', sip_password: password, termination_uri: '' });
    const rotated = await updateImportedPhoneNumber(org, imported.id, { sip_password: 'n3w-pass' });
    expect(rotated).toMatchObject({ name: 'London office', sip_password: 'n3w-pass' });
    expect(JSON.stringify(await getItem(keys.phoneNumber(org, imported.id)))).not.toContain('n3w-pass');
  });

  it('PUT answers 404 for a bought number, another organization\'s number and an unknown id', async () => {
    const org = uuidv7();
    const bought = await buy(org, await listed('305'));
    const imported = await importNumber(org, { phone: '+493012345678', type: 'sip' });
    expect(await rejection(updateImportedPhoneNumber(org, bought.id, { name: 'x' }))).toBeInstanceOf(NotFoundError);
    expect(await rejection(updateImportedPhoneNumber(uuidv7(), imported.id, { name: 'x' }))).toBeInstanceOf(NotFoundError);
    expect(await rejection(updateImportedPhoneNumber(org, uuidv7(), { name: 'x' }))).toBeInstanceOf(NotFoundError);
    expect(await rejection(updateImportedPhoneNumber(org, imported.id, {}))).toBeInstanceOf(ValidationError);
  });
});

describe('updating and releasing', () => {
  it('attaches an agent of the organization only, and detaches with null', async () => {
    const org = uuidv7();
    const number = await importNumber(org, { phone: '+16175550150', type: 'pstn' });
    const agent = await createAgent(org, { name: 'Receptionist' } as never);
    const foreignAgent = await createAgent(uuidv7(), { name: 'Elsewhere' } as never);
    expect(await updatePhoneNumber(org, number.id, { inbound_agent_id: agent.id, name: 'Front desk' })).toMatchObject({ inbound_agent_id: agent.id, name: 'Front desk' });
    const foreign = await rejection(updatePhoneNumber(org, number.id, { inbound_agent_id: foreignAgent.id }));
    expect(foreign).toBeInstanceOf(ValidationError);
    expect(foreign.details).toEqual({ fields: [{ path: 'inbound_agent_id', message: expect.stringContaining('does not exist') }] });
    expect(await updatePhoneNumber(org, number.id, { inbound_agent_id: null })).toMatchObject({ inbound_agent_id: null });
    expect(await rejection(updatePhoneNumber(uuidv7(), number.id, { name: 'x' }))).toBeInstanceOf(NotFoundError);
  });

  it('releases a bought number: status released, kept in the list, back in the pool, no longer changeable', async () => {
    // Prepare
    const org = uuidv7();
    const choice = await listed('617');
    const bought = await buy(org, choice);
    // Act
    await release(org, bought.id);
    // Assess
    const released = await getPhoneNumber(org, bought.id);
    expect(released).toMatchObject({ status: 'released', released_at: expect.any(String) });
    expect((await getItem<Record<string, unknown>>(keys.phoneNumber(org, bought.id)))!.carrier_released_at).toEqual(expect.any(String));
    expect(await getItem(keys.numberClaim(choice.phone_number))).toBeUndefined();
    const { items } = await listAvailablePhoneNumbers(org, { country: 'US', area_code: '617', limit: 100 });
    expect(items.map((n) => n.phone_number)).toContain(choice.phone_number);
    const all = await listPhoneNumbers(org, page);
    const active = await listPhoneNumbers(org, { ...page, status: 'active' });
    const gone = await listPhoneNumbers(org, { ...page, status: 'released' });
    expect([all.meta.total, active.meta.total, gone.meta.total]).toEqual([1, 0, 1]);
    expect(gone.items[0].id).toBe(bought.id);
    expect(await rejection(release(org, bought.id))).toBeInstanceOf(ConflictError);
    expect(await rejection(updatePhoneNumber(org, bought.id, { name: 'x' }))).toBeInstanceOf(ConflictError);
    // Someone else can buy it again; the first charge stays in the first ledger only.
    const other = uuidv7();
    await buy(other, choice);
    expect((await listCharges(org, page)).meta.total).toBe(1);
    expect((await listCharges(other, page)).meta.total).toBe(1);
  });

  it('refuses to release a number in use by a campaign (409), and releases it once free', async () => {
    const org = uuidv7();
    const number = await importNumber(org, { phone: '+16175550160', type: 'pstn' });
    await transact([updateExisting(keys.phoneNumber(org, number.id), { in_use: 1 })]);
    const refused = await rejection(release(org, number.id));
    expect(refused).toBeInstanceOf(ConflictError);
    expect((await getPhoneNumber(org, number.id)).status).toBe('active');
    await transact([updateExisting(keys.phoneNumber(org, number.id), { in_use: 0 })]);
    await release(org, number.id);
    // Released imported numbers free the E.164 number for anyone.
    await importNumber(uuidv7(), { phone: '+16175550160', type: 'pstn' });
  });

  it('finishes the carrier side on a repeated DELETE when the carrier failed the first time', async () => {
    const org = uuidv7();
    const choice = await listed('213');
    const bought = await buy(org, choice);
    process.env.SIMULATED_CARRIER_FAIL = 'release';
    expect(await rejection(release(org, bought.id))).toBeInstanceOf(UnavailableError);
    expect((await getPhoneNumber(org, bought.id)).status).toBe('released');
    delete process.env.SIMULATED_CARRIER_FAIL;
    await release(org, bought.id);
    expect(await getItem(keys.simulatedCarrierNumber('US', choice.phone_number))).toBeUndefined();
    expect(await rejection(release(org, bought.id))).toBeInstanceOf(ConflictError);
  });
});

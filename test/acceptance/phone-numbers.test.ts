/**
 * Black-box: phone numbers and the billing ledger through the local runtime's HTTP API, with
 * the simulated carrier. Two organizations, each with its own key.
 */
import { generateApiKey } from '../../shared/domain/api-keys/secret';
import { usePlatform } from '../support/platform';

const keyA = generateApiKey();
const keyB = generateApiKey();
const local = usePlatform({ apiKeys: [keyA, keyB] });
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

const listedIn = async (areaCode: string, limit = 5) => {
  const res = await api('GET', `/api/v1/phone-numbers/available?area_code=${areaCode}&limit=${limit}`);
  expect(res.status).toBe(200);
  return res.body.data as Array<{ phone_number: string; price: number; per_minute_price_inbound: number; per_minute_price_outbound: number }>;
};

describe('phone numbers', () => {
  it('lists numbers in an area code, buys one, and shows the charge', async () => {
    // Prepare
    const available = await api('GET', '/api/v1/phone-numbers/available?country=us&area_code=415&contains=2&limit=3');
    expect(available.status).toBe(200);
    expect(available.body.meta).toMatchObject({ total: 3, limit: 3, offset: 0 });
    expect(available.body.data[0]).toEqual({
      phone_number: expect.stringMatching(/^\+1415\d{7}$/), country: 'US', locality: 'San Francisco', region: 'CA',
      price: 1.15, per_minute_price_inbound: 0.0085, per_minute_price_outbound: 0.014,
      capabilities: { voice: true, sms: true, mms: true },
    });
    const choice = available.body.data[1];
    // Act
    const bought = await api('POST', '/api/v1/phone-numbers/buy/', {
      body: { phone_number: choice.phone_number, price: choice.price, per_minute_price_inbound: 0.0085, per_minute_price_outbound: 0.014 },
    });
    // Assess
    expect(bought.status).toBe(200);
    expect(bought.body).toMatchObject({
      success: true,
      data: { id: expect.any(String), phone_number: choice.phone_number, price: 1.15, status: 'active', purchased_at: expect.stringMatching(/Z$/), source: 'purchased' },
    });
    const charges = await api('GET', '/api/v1/billing/charges');
    expect(charges.status).toBe(200);
    expect(charges.body.meta.total).toBe(1);
    expect(charges.body.data[0]).toMatchObject({ amount: 1.15, currency: 'USD', reason: 'number_purchase', resource_id: bought.body.data.id, created_at: expect.any(String) });
    const again = await listedIn('415', 100);
    expect(again.map((n) => n.phone_number)).not.toContain(choice.phone_number);
  });

  it('charges once for a buy repeated with the same Idempotency-Key, and 409s a different body under that key', async () => {
    const [choice, other] = await listedIn('312');
    const headers = { 'idempotency-key': 'buy-312-once' };
    const body = { phone_number: choice.phone_number, price: choice.price };
    const first = await api('POST', '/api/v1/phone-numbers/buy', { key: keyB, body, headers });
    const second = await api('POST', '/api/v1/phone-numbers/buy', { key: keyB, body, headers });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.data.id).toBe(first.body.data.id);
    const charges = await api('GET', '/api/v1/billing/charges', { key: keyB });
    expect(charges.body.data.filter((c: any) => c.phone_number === choice.phone_number)).toHaveLength(1);
    const different = await api('POST', '/api/v1/phone-numbers/buy', { key: keyB, body: { phone_number: other.phone_number, price: other.price }, headers });
    expect(different.status).toBe(409);
    // Without a key, buying the same number again finds it sold.
    const twice = await api('POST', '/api/v1/phone-numbers/buy', { key: keyB, body });
    expect(twice.status).toBe(422);
    expect(twice.body.error.code).toBe('UNPROCESSABLE');
  });

  it('refuses a price that does not match the listing with 422', async () => {
    const [choice] = await listedIn('512');
    const res = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: 0.5 } });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ success: false, error: { code: 'UNPROCESSABLE', details: { listed: { price: choice.price } } } });
  });

  it('imports a SIP trunk number, renames it with PUT, attaches an agent with PATCH, lists and releases numbers', async () => {
    // Import
    const imported = await api('POST', '/api/v1/phone-numbers/import/', {
      body: { phone: '+1 617-555-0188', type: 'sip', name: 'Trunk', termination_uri: 'sip:pbx.example.com:5060', sip_username: 'acme', sip_password: 'Tr0ub4dor&3' },
    });
    expect(imported.status).toBe(200);
    expect(imported.body.data).toMatchObject({
      id: expect.any(String), phone: '+16175550188', type: 'sip', name: 'Trunk', termination_uri: 'sip:pbx.example.com:5060',
      sip_username: 'acme', sip_password: 'Tr0ub4dor&3', status: 'active', created_at: expect.any(String), source: 'imported',
    });
    const id = imported.body.data.id;
    expect(local().logs.join('\n')).not.toContain('Tr0ub4dor&3');

    // Rename (PUT replaces only the given fields)
    const renamed = await api('PUT', `/api/v1/phone-numbers/import/${id}`, { body: { name: 'Boston trunk' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.data).toMatchObject({ name: 'Boston trunk', sip_username: 'acme', sip_password: 'Tr0ub4dor&3', termination_uri: 'sip:pbx.example.com:5060' });

    // Attach an agent
    const agent = await api('POST', '/api/v1/agents', { body: { name: 'Receptionist' } });
    const attached = await api('PATCH', `/api/v1/phone-numbers/${id}`, { body: { inbound_agent_id: agent.body.data.id } });
    expect(attached.status).toBe(200);
    expect(attached.body.data.inbound_agent_id).toBe(agent.body.data.id);
    // Deleting that agent detaches it from the number.
    const spare = await api('POST', '/api/v1/agents', { body: { name: 'Temp' } });
    await api('PATCH', `/api/v1/phone-numbers/${id}`, { body: { inbound_agent_id: spare.body.data.id } });
    await api('DELETE', `/api/v1/agents/${spare.body.data.id}`);
    // The agent-cleanup job detaches a deleted agent's numbers (docs/api.md, "Versions").
    await local().platform.queue.waitForIdle();
    expect((await api('GET', `/api/v1/phone-numbers/${id}`)).body.data.inbound_agent_id).toBeNull();
    await api('PATCH', `/api/v1/phone-numbers/${id}`, { body: { inbound_agent_id: agent.body.data.id } });

    // The same number cannot be held twice, by anyone
    const duplicate = await api('POST', '/api/v1/phone-numbers/import', { key: keyB, body: { phone: '+16175550188', type: 'pstn' } });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.code).toBe('CONFLICT');

    // List: bought and imported, with source
    const listed = await api('GET', '/api/v1/phone-numbers');
    expect(listed.status).toBe(200);
    expect(listed.body.meta.total).toBe(listed.body.data.length);
    expect(new Set(listed.body.data.map((n: any) => n.source))).toEqual(new Set(['purchased', 'imported']));
    const one = await api('GET', `/api/v1/phone-numbers/${id}/`);
    expect(one.body.data).toMatchObject({ id, name: 'Boston trunk' });

    // Release: status released, still listed, filterable
    const released = await api('DELETE', `/api/v1/phone-numbers/${id}`);
    expect(released.status).toBe(200);
    expect(released.body).toEqual({ success: true, message: 'Phone number released successfully' });
    expect((await api('GET', `/api/v1/phone-numbers/${id}`)).body.data).toMatchObject({ status: 'released', released_at: expect.any(String) });
    const activeOnly = await api('GET', '/api/v1/phone-numbers?status=active');
    expect(activeOnly.body.data.map((n: any) => n.id)).not.toContain(id);
    const releasedOnly = await api('GET', '/api/v1/phone-numbers?status=released');
    expect(releasedOnly.body.data.map((n: any) => n.id)).toContain(id);
    expect((await api('DELETE', `/api/v1/phone-numbers/${id}`)).status).toBe(409);
    // Released, the number can be held again
    expect((await api('POST', '/api/v1/phone-numbers/import', { key: keyB, body: { phone: '+16175550188', type: 'pstn' } })).status).toBe(200);
  });

  it('releases a bought number back to the pool', async () => {
    const [choice] = await listedIn('206');
    const bought = await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } });
    expect((await api('DELETE', `/api/v1/phone-numbers/${bought.body.data.id}`)).status).toBe(200);
    expect((await listedIn('206', 100)).map((n) => n.phone_number)).toContain(choice.phone_number);
  });

  it.each([
    ['a malformed number to buy', 'POST', '/api/v1/phone-numbers/buy', { phone_number: '415-555', price: 1.15 }, 'phone_number'],
    ['a number without + or country', 'POST', '/api/v1/phone-numbers/import', { phone: '4155550123', type: 'sip' }, 'phone'],
    ['an unknown connection type', 'POST', '/api/v1/phone-numbers/import', { phone: '+14155550123', type: 'fax' }, 'type'],
    ['a negative price', 'POST', '/api/v1/phone-numbers/buy', { phone_number: '+14155550123', price: -1 }, 'price'],
    ['an unknown field', 'POST', '/api/v1/phone-numbers/import', { phone: '+14155550123', type: 'sip', color: 'red' }, 'color'],
    ['a bad termination URI', 'POST', '/api/v1/phone-numbers/import', { phone: '+14155550123', type: 'sip', termination_uri: 'not a uri' }, 'termination_uri'],
  ])('answers %s with a 400 naming the field', async (_why, method, path, body, field) => {
    const res = await api(method, path, { body });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('VALIDATION_ERROR');
    expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(field);
  });

  it.each([
    ['a country that is not alpha-2', '/api/v1/phone-numbers/available?country=USA', 'country'],
    ['a non-numeric area code', '/api/v1/phone-numbers/available?area_code=4x5', 'area_code'],
    ['a limit above 100', '/api/v1/phone-numbers/available?limit=500', 'limit'],
    ['an unknown status filter', '/api/v1/phone-numbers?status=lost', 'status'],
    ['a path id that is not a UUID', '/api/v1/phone-numbers/not-a-uuid', 'id'],
  ])('answers %s with a 400 naming the parameter', async (_why, path, field) => {
    const res = await api('GET', path);
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields.map((f: any) => f.path)).toContain(field);
  });

  it('names inbound_agent_id when the agent is not the organization\'s, and answers 404 for another organization\'s number', async () => {
    const imported = await api('POST', '/api/v1/phone-numbers/import', { body: { phone: '+442079460111', type: 'pstn' } });
    const id = imported.body.data.id;
    const foreignAgent = await api('POST', '/api/v1/agents', { key: keyB, body: { name: 'Not yours' } });
    const patched = await api('PATCH', `/api/v1/phone-numbers/${id}`, { body: { inbound_agent_id: foreignAgent.body.data.id } });
    expect(patched.status).toBe(400);
    expect(patched.body.error.details.fields).toEqual([{ path: 'inbound_agent_id', message: expect.any(String) }]);
    expect((await api('PATCH', `/api/v1/phone-numbers/${id}`, { body: {} })).status).toBe(400);

    for (const [method, path, body] of [
      ['GET', `/api/v1/phone-numbers/${id}`, undefined],
      ['PATCH', `/api/v1/phone-numbers/${id}`, { name: 'mine now' }],
      ['PUT', `/api/v1/phone-numbers/import/${id}`, { name: 'mine now' }],
      ['DELETE', `/api/v1/phone-numbers/${id}`, undefined],
    ] as const) {
      const res = await api(method, path, { key: keyB, body });
      expect([method, res.status]).toEqual([method, 404]);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    const theirs = await api('GET', '/api/v1/phone-numbers', { key: keyB });
    expect(theirs.body.data.map((n: any) => n.id)).not.toContain(id);
  });

  it('pages the ledger', async () => {
    for (const choice of (await listedIn('305', 3))) {
      expect((await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } })).status).toBe(200);
    }
    const first = await api('GET', '/api/v1/billing/charges?limit=2');
    expect(first.body.data).toHaveLength(2);
    expect(first.body.meta.total).toBeGreaterThanOrEqual(4);
    const next = await api('GET', `/api/v1/billing/charges?limit=2&cursor=${first.body.meta.next_cursor}`);
    expect(next.body.data[0].id).not.toBe(first.body.data[0].id);
    const offset = await api('GET', '/api/v1/billing/charges?limit=2&offset=2');
    expect(offset.body.data.map((c: any) => c.id)).toEqual(next.body.data.map((c: any) => c.id));
  });
});

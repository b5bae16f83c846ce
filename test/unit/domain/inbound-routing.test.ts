import { inboundWebhookBody, readRoutingAnswer } from '../../../shared/domain/calls/inbound-routing';
import { isBuiltInVariable } from '../../../shared/domain/conversations/variables';

/** How a routing webhook's answer is read (docs/api.md, "Per-caller routing"): used whole or not at all. */
describe('readRoutingAnswer', () => {
  const agent = '01936f5e-1c2b-7a3d-9e4f-0123456789ab';

  it('takes an agent, a pin and variables; numbers and booleans become their text; unknown members are ignored', () => {
    expect(readRoutingAnswer({ agent_id: agent.toUpperCase(), agent_version: 2, variables: { tier: 'gold', visits: 3, vip: true }, extra: 1 })).toEqual({
      ok: true, choice: { agentId: agent, agentVersion: 2, variables: { 'inbound.tier': 'gold', 'inbound.visits': '3', 'inbound.vip': 'true' } },
    });
    expect(readRoutingAnswer({ agent_version: 'draft', variables: null, agent_id: null })).toEqual({ ok: true, choice: { agentVersion: 'draft', variables: {} } });
    expect(readRoutingAnswer({})).toEqual({ ok: true, choice: { variables: {} } });
  });

  it('a refusal wins over the rest and needs a message', () => {
    expect(readRoutingAnswer({ reject: { message: '  Closed.  ' }, agent_id: agent })).toEqual({ ok: true, choice: { variables: {}, reject: 'Closed.' } });
    expect(readRoutingAnswer({ reject: {} })).toMatchObject({ ok: false, error: expect.stringMatching(/^reject\.message/) });
    expect(readRoutingAnswer({ reject: { message: 'x'.repeat(1001) } })).toMatchObject({ ok: false });
  });

  it.each([
    [[], /^the answer is not a JSON object/],
    ['agent', /^the answer is not a JSON object/],
    [{ agent_id: 'not-an-id' }, /^agent_id must be an agent id/],
    [{ agent_version: 0 }, /^agent_version must be/],
    [{ agent_version: 1.5 }, /^agent_version must be/],
    [{ variables: [] }, /^variables must be an object/],
    [{ variables: { tier: { level: 1 } } }, /^variables\.tier must be a text/],
    [{ variables: { tier: null } }, /^variables\.tier must be a text/],
    [{ variables: { 'bad name': 'x' } }, /^variables\.bad name is not a variable name/],
    [{ variables: { tier: 'x'.repeat(2001) } }, /^variables\.tier must be at most 2000/],
    [{ variables: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`v${i}`, 'x'])) }, /^variables must have at most 50/],
  ])('refuses %j', (answer, error) => {
    expect(readRoutingAnswer(answer)).toEqual({ ok: false, error: expect.stringMatching(error) });
  });

  it('sends the contact only when there is one, with its names', () => {
    const caller = { from: '+14155550142', to: '+14155550100', providerCallId: 'CA1' };
    expect(JSON.parse(inboundWebhookBody({ id: 'n1' }, caller, undefined))).toEqual({ event: 'call.inbound', call: { from: caller.from, to: caller.to, phone_number_id: 'n1' } });
    expect(JSON.parse(inboundWebhookBody({ id: 'n1' }, caller, { id: 'c1', phone: caller.from, first_name: 'Ann' })).contact).toEqual({ id: 'c1', phone_number: caller.from, first_name: 'Ann', last_name: '' });
  });

  it('keeps `inbound.*` for the platform: no widget visitor sets it', () => {
    expect(isBuiltInVariable('inbound.tier')).toBe(true);
    expect(isBuiltInVariable('inbound')).toBe(false);
  });
});

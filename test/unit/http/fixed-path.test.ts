/**
 * Deployed, API Gateway routes `PATCH /contacts/search` to the `PATCH /contacts/{id}` function
 * (its route key is the `{id}` one): the function itself must answer 405 with `Allow`.
 */
import { handler as updateContact } from '../../../functions/contacts/update';
import { handler as getPhoneNumber } from '../../../functions/phone-numbers/get';
import { apiEvent, lambdaContext, parsed } from '../../support/events';

function routed(method: string, template: string, params: Record<string, string>) {
  const path = template.replace(/\{([^}]+)\}/g, (_, name: string) => params[name]!);
  const event = apiEvent({ method, path, pathParameters: params, headers: { 'content-type': 'application/json' }, body: method === 'GET' ? undefined : {} });
  // The route key API Gateway matched: the `{param}` route, not the path sent.
  event.routeKey = `${method} ${template}`;
  event.requestContext.routeKey = event.routeKey;
  return event;
}

describe('a wrong method on a fixed path, invoked as API Gateway does', () => {
  it('PATCH /contacts/search reaching the {id} function answers 405 with Allow: GET, before auth and validation', async () => {
    const res = parsed(await updateContact(routed('PATCH', '/api/v1/contacts/{id}', { id: 'search' }), lambdaContext));
    expect([res.status, res.body.error.code, res.headers.allow]).toEqual([405, 'METHOD_NOT_ALLOWED', 'GET']);
  });

  it('GET /phone-numbers/buy reaching the {id} function answers 405 with Allow: POST', async () => {
    const res = parsed(await getPhoneNumber(routed('GET', '/api/v1/phone-numbers/{id}', { id: 'buy' }), lambdaContext));
    expect([res.status, res.headers.allow]).toEqual([405, 'POST']);
  });

  it('leaves a real id to the operation (401 here: no API key)', async () => {
    const res = parsed(await updateContact(routed('PATCH', '/api/v1/contacts/{id}', { id: '0190aaaa-0000-7000-8000-000000000000' }), lambdaContext));
    expect(res.status).toBe(401);
  });
});

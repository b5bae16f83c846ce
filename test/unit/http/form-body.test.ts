import { formBody } from '../../../shared/http/middleware/form-body';
import { stateOf } from '../../../shared/http/context';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('form-body', () => {
  const h = stack(op(), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).body ?? null) }), formBody({ maxBytes: 64 }));
  const form = { 'content-type': 'application/x-www-form-urlencoded' };

  it('parses form bodies into strings', async () => {
    const r = parsed(await h(apiEvent({ headers: form, body: 'CallSid=CA1&CallStatus=in-progress&Note=a+b%26c' }), lambdaContext));
    expect(r.body).toEqual({ CallSid: 'CA1', CallStatus: 'in-progress', Note: 'a b&c' });
  });

  it('rejects another content type with a 400 naming it', async () => {
    const r = parsed(await h(apiEvent({ headers: { 'content-type': 'application/json' }, body: '{}' }), lambdaContext));
    expect(r.status).toBe(400);
    expect(r.body.error.details.fields[0].path).toBe('content-type');
  });

  it('answers 413 above the limit', async () => {
    const r = parsed(await h(apiEvent({ headers: form, body: `a=${'x'.repeat(100)}` }), lambdaContext));
    expect(r.status).toBe(413);
  });
});

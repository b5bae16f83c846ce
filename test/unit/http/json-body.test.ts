import { jsonBody } from '../../../shared/http/middleware/json-body';
import { stateOf } from '../../../shared/http/context';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('json-body', () => {
  const h = stack(op(), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).body ?? null) }), jsonBody({ maxBytes: 64 }));
  it('parses JSON bodies', async () => {
    const r = parsed(await h(apiEvent({ headers: { 'content-type': 'application/json' }, body: { a: 1 } }), lambdaContext));
    expect(r.body).toEqual({ a: 1 });
  });
  it.each([
    ['malformed JSON', { 'content-type': 'application/json' }, '{"a":', 400, 'body'],
    ['wrong content type', { 'content-type': 'text/plain' }, '{}', 400, 'content-type'],
  ])('rejects %s', async (_name, headers, body, status, path) => {
    const r = parsed(await h(apiEvent({ headers, body }), lambdaContext));
    expect(r.status).toBe(status);
    expect(r.body.error.details.fields[0].path).toBe(path);
  });
  it('answers 413 above the limit', async () => {
    const r = parsed(await h(apiEvent({ headers: { 'content-type': 'application/json' }, body: { text: 'x'.repeat(100) } }), lambdaContext));
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });
});

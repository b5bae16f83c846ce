import * as z from 'zod/mini';
import { jsonBody } from '../../../shared/http/middleware/json-body';
import { validate } from '../../../shared/http/middleware/validate';
import { stateOf } from '../../../shared/http/context';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('validate', () => {
  const operation = op({
    params: z.strictObject({ id: z.string().check(z.regex(/^\d+$/)) }),
    query: z.strictObject({ q: z.optional(z.string()) }),
    body: z.strictObject({ name: z.string(), schedule: z.optional(z.strictObject({ max_concurrent: z.int().check(z.minimum(1)) })) }),
  });
  const h = stack(operation, (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).input) }), jsonBody(), validate());
  it('names every offending field, unknown ones included', async () => {
    const r = parsed(await h(apiEvent({
      pathParameters: { id: 'abc' }, query: { q: 'x', extra: '1' },
      headers: { 'content-type': 'application/json' }, body: { schedule: { max_concurrent: 0 }, bogus: true },
    }), lambdaContext));
    expect(r.status).toBe(400);
    const paths = r.body.error.details.fields.map((f: any) => `${f.in}:${f.path}`).sort();
    expect(paths).toEqual(['body:bogus', 'body:name', 'body:schedule.max_concurrent', 'path:id', 'query:extra']);
    expect(r.body.error.details.fields.find((f: any) => f.path === 'name').message).toBe('is required');
  });
  it('passes parsed input on', async () => {
    const r = parsed(await h(apiEvent({ pathParameters: { id: '7' }, headers: { 'content-type': 'application/json' }, body: { name: 'n' } }), lambdaContext));
    expect(r.body).toEqual({ params: { id: '7' }, query: {}, body: { name: 'n' } });
  });
  it('requires a declared body, unless the operation marks it optional (then none reads as {})', async () => {
    const options = z.strictObject({ assumed: z.optional(z.int()) });
    const required = stack(op({ body: options }), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).input) }), jsonBody(), validate());
    const optional = stack(op({ body: options, bodyOptional: true }), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).input) }), jsonBody(), validate());
    const none = await required(apiEvent({}), lambdaContext);
    expect(parsed(none).status).toBe(400);
    expect(parsed(none).body.error.details.fields).toEqual([expect.objectContaining({ path: 'body', message: 'is required' })]);
    const r = parsed(await optional(apiEvent({}), lambdaContext));
    expect(r.status).toBe(200);
    expect(r.body.body).toEqual({});
  });
});

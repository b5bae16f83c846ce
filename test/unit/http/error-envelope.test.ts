import { NotFoundError } from '../../../shared/errors';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('error-envelope', () => {
  it('maps typed errors to their status and code, unknown ones to a bare 500', async () => {
    const typed = stack(op(), () => { throw new NotFoundError('Agent', 'a1'); });
    const unknown = stack(op(), () => { throw new Error('secret internals'); });
    const t = parsed(await typed(apiEvent(), lambdaContext));
    const u = parsed(await unknown(apiEvent(), lambdaContext));
    expect(t.body).toEqual({ success: false, message: 'Agent a1 not found', error: { code: 'NOT_FOUND', message: 'Agent a1 not found', details: { resource: 'Agent', id: 'a1' } } });
    expect(u.status).toBe(500);
    expect(u.body.error.code).toBe('INTERNAL');
    expect(JSON.stringify(u.body)).not.toContain('secret internals');
    expect(u.body.error.details.request_id).toBe('req-test-1');
  });
});

import { NotFoundError } from '../../../shared/errors';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('request-context', () => {
  it('stamps X-Request-Id on success and on error, echoing a safe caller id', async () => {
    // Prepare
    const ok = stack(op(), () => ({ statusCode: 200, body: '{}' }));
    const fail = stack(op(), () => { throw new NotFoundError('Thing', 'x'); });
    // Act
    const a = parsed(await ok(apiEvent({ headers: { 'x-request-id': 'abc-123' } }), lambdaContext));
    const b = parsed(await fail(apiEvent({ headers: { 'x-request-id': 'bad id with spaces' } }), lambdaContext));
    // Assess
    expect(a.headers['x-request-id']).toBe('abc-123');
    expect(b.headers['x-request-id']).toBe('req-test-1');
    expect(b.status).toBe(404);
  });
});

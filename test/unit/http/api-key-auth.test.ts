import { apiKeyAuth } from '../../../shared/http/middleware/auth';
import { stateOf } from '../../../shared/http/context';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('api-key-auth', () => {
  const lookup = async (key: string) => (key === 'good' ? { organizationId: 'org-1', keyId: 'k1' } : null);
  const h = stack(op({ auth: true }), (event) => ({ statusCode: 200, body: JSON.stringify(stateOf(event).caller) }), apiKeyAuth({ lookup }));
  it('lets a known key through with its organization', async () => {
    const r = parsed(await h(apiEvent({ headers: { 'X-Api-Key': 'good' } }), lambdaContext));
    expect(r.body.organizationId).toBe('org-1');
  });
  it.each([[{}], [{ 'x-api-key': 'bad' }]])('answers 401 for %j', async (headers) => {
    const r = parsed(await h(apiEvent({ headers }), lambdaContext));
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe('UNAUTHORIZED');
  });
});

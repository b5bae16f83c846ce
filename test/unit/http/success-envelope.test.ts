import { successEnvelope, withMessage } from '../../../shared/http/middleware/success-envelope';
import { listResult } from '../../../shared/domain/common/list-result';
import { accepted } from '../../../shared/domain/common/accepted';
import { apiEvent, lambdaContext, parsed } from '../../support/events';
import { op, stack } from './stack';

describe('success-envelope', () => {
  it('wraps data, lists with meta, deletions without data, and custom messages', async () => {
    const get = stack(op({ method: 'GET' }), () => ({ id: 1 }), successEnvelope());
    const list = stack(op({ method: 'GET' }), () => listResult({ items: [1, 2], nextCursor: 'c' }, 7, { limit: 2, offset: 0 }), successEnvelope());
    const del = stack(op({ method: 'DELETE' }), () => undefined, successEnvelope());
    const custom = stack(op({ method: 'POST' }), () => withMessage('Campaign started', { id: 2 }), successEnvelope());
    expect(parsed(await get(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Retrieved successfully', data: { id: 1 } });
    expect(parsed(await list(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Retrieved successfully', data: [1, 2], meta: { total: 7, limit: 2, offset: 0, next_cursor: 'c' } });
    expect(parsed(await del(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Deleted successfully' });
    expect(parsed(await custom(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Campaign started', data: { id: 2 } });
  });

  it('answers 202 with the same envelope for data marked accepted (its own message when the operation names one), 200 otherwise', async () => {
    const waits = stack(op({ method: 'POST', acceptedMessage: 'Call waiting for a concurrency slot' }), () => accepted({ id: 3 }), successEnvelope());
    const plain = stack(op({ method: 'POST' }), () => accepted({ id: 4 }), successEnvelope());
    const waited = parsed(await waits(apiEvent(), lambdaContext));
    expect(waited.status).toBe(202);
    expect(waited.body).toEqual({ success: true, message: 'Call waiting for a concurrency slot', data: { id: 3 } });
    expect(parsed(await plain(apiEvent(), lambdaContext)).body).toEqual({ success: true, message: 'Created successfully', data: { id: 4 } });
  });
});

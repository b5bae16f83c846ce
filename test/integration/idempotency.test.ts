import { v7 as uuidv7 } from 'uuid';
import { jsonBody } from '../../shared/http/middleware/json-body';
import { idempotency } from '../../shared/http/middleware/idempotency';
import { successEnvelope } from '../../shared/http/middleware/success-envelope';
import { stateOf } from '../../shared/http/context';
import { claimIdempotencyKey } from '../../shared/db/idempotency-store';
import { apiEvent, lambdaContext, parsed } from '../support/events';
import { op, stack } from '../unit/http/stack';

/** A POST handler behind the idempotency middleware that counts how often it really runs. */
function counted(orgId: string, fail = false) {
  let runs = 0;
  const handler = stack(op({ method: 'POST', auth: true, operationId: 'createThing' }), () => {
    runs++;
    if (fail) throw new Error('boom');
    return { n: runs };
  },
  { before: (req: any) => { stateOf(req.event).caller = { organizationId: orgId, keyId: 'k' }; } },
  jsonBody(), idempotency({ leaseMs: 50 }), successEnvelope());
  return { handler, runs: () => runs };
}

const post = (key: string, body: unknown) =>
  apiEvent({ method: 'POST', path: '/api/v1/things', headers: { 'content-type': 'application/json', 'idempotency-key': key }, body });

describe('idempotency middleware (DynamoDB Local)', () => {
  it('runs once and replays the first answer for the same key and body', async () => {
    const { handler, runs } = counted(uuidv7());
    const first = parsed(await handler(post('k1', { a: 1, b: 2 }), lambdaContext));
    const again = parsed(await handler(post('k1', { b: 2, a: 1 }), lambdaContext));
    expect(runs()).toBe(1);
    expect(again.body).toEqual(first.body);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('answers 409 for the same key with another body', async () => {
    const { handler } = counted(uuidv7());
    await handler(post('k2', { a: 1 }), lambdaContext);
    const other = parsed(await handler(post('k2', { a: 2 }), lambdaContext));
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe('CONFLICT');
  });

  it('keeps keys apart per organization', async () => {
    const a = counted(uuidv7());
    const b = counted(uuidv7());
    await a.handler(post('shared', { a: 1 }), lambdaContext);
    await b.handler(post('shared', { a: 2 }), lambdaContext);
    expect([a.runs(), b.runs()]).toEqual([1, 1]);
  });

  it('answers 409 while the first request holds the key, and lets a stale claim be taken over', async () => {
    const orgId = uuidv7();
    const { handler, runs } = counted(orgId);
    // Another handler instance (another Lambda) completed the key first: this one replays.
    await counted(orgId).handler(post('k3', { a: 1 }), lambdaContext);
    expect(parsed(await handler(post('k3', { a: 1 }), lambdaContext)).status).toBe(200);
    expect(runs()).toBe(0);
    // A claim still in progress is a 409; once its lease has run out (its Lambda died) it can be taken over.
    const claim = await claimIdempotencyKey(orgId, 'createThing', 'k4', 'hash', 60_000);
    expect(claim).toBeNull();
    const held = await claimIdempotencyKey(orgId, 'createThing', 'k4', 'hash', 60_000);
    expect(held?.status).toBe('in_progress');
    const busy = counted(orgId);
    expect(parsed(await busy.handler(post('k4', { a: 1 }), lambdaContext)).status).toBe(409);
    const takeover = await claimIdempotencyKey(orgId, 'createThing', 'k4', 'hash', 60_000, Date.now() + 120_000);
    expect(takeover).toBeNull();
  });

  it('releases the key when the request fails, so a retry runs', async () => {
    const orgId = uuidv7();
    const failing = counted(orgId, true);
    expect(parsed(await failing.handler(post('k5', { a: 1 }), lambdaContext)).status).toBe(500);
    const ok = counted(orgId);
    expect(parsed(await ok.handler(post('k5', { a: 1 }), lambdaContext)).status).toBe(200);
    expect(ok.runs()).toBe(1);
  });
});

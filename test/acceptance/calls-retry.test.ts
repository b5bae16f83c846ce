/**
 * Black-box: a `POST /calls` retried with its Idempotency-Key after a failure that followed the
 * call's write never makes a second call. The idempotency record is released on any failure (a
 * 5xx, the function's early timeout answer while the handler goes on), so the retry runs again; the
 * request's marker, written with the call in its transaction, makes it answer that call.
 */
import { keys } from '../../shared/db/keys';
import { deleteKeys } from '../../shared/db/store';
import { usePlatform } from '../support/platform';

const local = usePlatform({});
const api = (...args: Parameters<ReturnType<typeof local>['api']>) => local().api(...args);

let body: Record<string, unknown>;
beforeAll(async () => {
  const [choice] = (await api('GET', '/api/v1/phone-numbers/available?area_code=212&limit=1')).body.data;
  expect((await api('POST', '/api/v1/phone-numbers/buy', { body: { phone_number: choice.phone_number, price: choice.price } })).status).toBe(200);
  const agent = await api('POST', '/api/v1/agents', { body: { name: 'Caller', begin_message: 'Hello.' } });
  body = { agent_id: agent.body.data.id, from_phone_number: choice.phone_number, to_phone_number: '+14155550148' };
});

const calls = async () => (await api('GET', '/api/v1/calls?limit=100')).body.data;

it('answers the call a failed attempt of the same request wrote, instead of making another', async () => {
  const first = await api('POST', '/api/v1/calls', { body, headers: { 'idempotency-key': 'retry-after-500' } });
  expect(first.status).toBe(200);
  const orgId = first.body.data.organization_id;
  // As if the first attempt had answered 500 after its write: the middleware released its key.
  await deleteKeys([keys.idempotency(orgId, 'createCall', 'retry-after-500')]);
  const retried = await api('POST', '/api/v1/calls', { body, headers: { 'idempotency-key': 'retry-after-500' } });
  expect(retried.status).toBe(200);
  expect(retried.headers.get('idempotent-replayed')).toBeNull(); // not a replay of a stored answer: the request ran again
  expect(retried.body.data.id).toBe(first.body.data.id);
  expect((await calls()).filter((c: any) => c.to_phone_number === body.to_phone_number)).toHaveLength(1);
  // Another key is another call.
  const other = await api('POST', '/api/v1/calls', { body, headers: { 'idempotency-key': 'another-request' } });
  expect(other.body.data.id).not.toBe(first.body.data.id);
  expect((await calls()).filter((c: any) => c.to_phone_number === body.to_phone_number)).toHaveLength(2);
  // The calls' courses (dial, busy) run out before the platform stops.
  await local().platform.queue.waitForIdle();
  expect((await calls()).filter((c: any) => c.to_phone_number === body.to_phone_number).map((c: any) => c.disconnection_reason)).toEqual(['busy', 'busy']);
});

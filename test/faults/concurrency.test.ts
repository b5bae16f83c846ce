/**
 * The fault tier for concurrency limits: calls racing for a small limit under LOCAL_FAULTS
 * (transaction conflicts, throttles, redelivered messages). A failed transaction writes nothing,
 * so the count never goes above the limit, and once every call has ended every slot is free:
 * none leaked, none freed twice (the count would go below zero, or stay above it).
 */
import { randomUUID } from 'node:crypto';
import { runCallRecovery } from '../../shared/domain/calls/recovery';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

const local = usePlatform({ faults: 'on,dynamo.conflict=0.1,dynamo.throttle=0.02,sqs.redeliver=0.1,backoff=0.1,seed=44' });

/** A request retried (with one Idempotency-Key) through the faults' 503s and in-progress 409s. */
const send = async (method: string, path: string, body?: unknown) => {
  const key = randomUUID();
  for (let attempt = 1; ; attempt++) {
    const reply = await local().api(method, path, { body, ...(method === 'POST' ? { headers: { 'Idempotency-Key': key } } : {}) });
    if ((reply.status !== 503 && !(reply.status === 409 && /in progress/.test(JSON.stringify(reply.body)))) || attempt >= 8) return reply;
    await new Promise((r) => setTimeout(r, 50 * attempt));
  }
};

/** Reads GET /concurrency every 20 ms until stopped; `stop` answers the most live calls seen. */
function watchPeak() {
  let peak = 0;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      const c = await local().api('GET', '/api/v1/concurrency');
      if (c.status === 200) peak = Math.max(peak, c.body.data.in_progress.total);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return { stop: async () => { watching = false; await watch; return peak; } };
}

it('never exceeds the limit and leaks no slot when transactions fail', async () => {
  const { api, expectFailures } = local();
  expectFailures(/\(injected\)/);
  const [choice] = (await send('GET', '/api/v1/phone-numbers/available?area_code=212&limit=1')).body.data;
  expect((await send('POST', '/api/v1/phone-numbers/buy', { phone_number: choice.phone_number, price: choice.price })).status).toBe(200);
  const agent = (await send('POST', '/api/v1/agents', { name: 'Caller', ring_duration_ms: 100_000 })).body.data.id;
  expect((await send('PATCH', '/api/v1/concurrency', { limit: 4 })).status).toBe(200);
  const peak = watchPeak();
  const replies = await Promise.all(Array.from({ length: 16 }, (_, i) => send('POST', '/api/v1/calls', { agent_id: agent, from_phone_number: choice.phone_number, to_phone_number: `+1415555${100 + i}7` })));
  expect(replies.every((r) => r.status === 200 || r.status === 429)).toBe(true);
  expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(4);
  await until(() => api('GET', '/api/v1/concurrency'), (c) => c.status === 200 && c.body.data.in_progress.total === 0, 'every slot freed');
  expect(await peak.stop()).toBeLessThanOrEqual(4);
  await new Promise((r) => setTimeout(r, 500));
  expect((await api('GET', '/api/v1/concurrency')).body.data.in_progress).toEqual({ outbound: 0, inbound: 0, web: 0, total: 0 });
}, 60_000);

it('places every waiting call ("queue": true) or ends it, never above the limit, leaving no slot and no place in the queue', async () => {
  const { api, expectFailures } = local();
  expectFailures(/\(injected\)/);
  const from = (await send('GET', '/api/v1/phone-numbers?limit=1')).body.data[0].phone_number;
  const agent = (await send('POST', '/api/v1/agents', { name: 'Queued caller', ring_duration_ms: 100_000 })).body.data.id;
  expect((await send('PATCH', '/api/v1/concurrency', { limit: 3 })).status).toBe(200);
  const peak = watchPeak();
  const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => send('POST', '/api/v1/calls', { agent_id: agent, from_phone_number: from, to_phone_number: `+1415555${300 + i}7`, queue: true })));
  expect(replies.every((r) => r.status === 200 || r.status === 202)).toBe(true);
  expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(3);
  const ids = replies.map((r) => r.body.data.id as string);
  // A placement lost to an injected failure is the sweep's: it runs as it would a minute on.
  const settled = await until(async () => {
    await runCallRecovery({ now: new Date(Date.now() + 61_000), lookbackHours: 1 }).catch(() => undefined);
    const calls = await Promise.all(ids.map((id) => api('GET', `/api/v1/calls/${id}`)));
    const concurrency = await api('GET', '/api/v1/concurrency');
    return { calls: calls.map((c) => c.body.data), concurrency: concurrency.body.data };
  }, (s) => s.calls.every((c) => c?.status === 'ended') && s.concurrency?.in_progress.total === 0 && s.concurrency.queued === 0, 'every waiting call placed and ended');
  expect(await peak.stop()).toBeLessThanOrEqual(3);
  // Each was placed (it rang out: no_answer), none timed out (300 s), none was dialed twice.
  expect(settled.calls.map((c) => c.disconnection_reason)).toEqual(ids.map(() => 'no_answer'));
}, 90_000);

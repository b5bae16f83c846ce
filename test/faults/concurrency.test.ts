/**
 * The fault tier for concurrency limits: calls racing for a small limit under LOCAL_FAULTS
 * (transaction conflicts, throttles, redelivered messages). A failed transaction writes nothing,
 * so the count never goes above the limit, and once every call has ended every slot is free:
 * none leaked, none freed twice (the count would go below zero, or stay above it).
 */
import { randomUUID } from 'node:crypto';
import { usePlatform } from '../support/platform';
import { until } from '../support/until';

const local = usePlatform({ faults: 'on,dynamo.conflict=0.1,dynamo.throttle=0.02,sqs.redeliver=0.1,backoff=0.1,seed=44' });

it('never exceeds the limit and leaks no slot when transactions fail', async () => {
  const { api, expectFailures } = local();
  expectFailures(/\(injected\)/);
  const send = async (method: string, path: string, body?: unknown) => {
    const key = randomUUID();
    for (let attempt = 1; ; attempt++) {
      const reply = await api(method, path, { body, ...(method === 'POST' ? { headers: { 'Idempotency-Key': key } } : {}) });
      if ((reply.status !== 503 && !(reply.status === 409 && /in progress/.test(JSON.stringify(reply.body)))) || attempt >= 8) return reply;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  };
  const [choice] = (await send('GET', '/api/v1/phone-numbers/available?area_code=212&limit=1')).body.data;
  expect((await send('POST', '/api/v1/phone-numbers/buy', { phone_number: choice.phone_number, price: choice.price })).status).toBe(200);
  const agent = (await send('POST', '/api/v1/agents', { name: 'Caller', ring_duration_ms: 100_000 })).body.data.id;
  expect((await send('PATCH', '/api/v1/concurrency', { limit: 4 })).status).toBe(200);
  let peak = 0;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      const c = await api('GET', '/api/v1/concurrency');
      if (c.status === 200) peak = Math.max(peak, c.body.data.in_progress.total);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const replies = await Promise.all(Array.from({ length: 16 }, (_, i) => send('POST', '/api/v1/calls', { agent_id: agent, from_phone_number: choice.phone_number, to_phone_number: `+1415555${100 + i}7` })));
  expect(replies.every((r) => r.status === 200 || r.status === 429)).toBe(true);
  expect(replies.filter((r) => r.status === 200).length).toBeLessThanOrEqual(4);
  await until(() => api('GET', '/api/v1/concurrency'), (c) => c.status === 200 && c.body.data.in_progress.total === 0, 'every slot freed');
  watching = false;
  await watch;
  expect(peak).toBeLessThanOrEqual(4);
  await new Promise((r) => setTimeout(r, 500));
  expect((await api('GET', '/api/v1/concurrency')).body.data.in_progress).toEqual({ outbound: 0, inbound: 0, web: 0, total: 0 });
}, 60_000);

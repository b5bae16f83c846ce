import { v7 as uuidv7 } from 'uuid';
import { installLocalQueue, type QueuePort } from '../../shared/adapters/queue';
import { resetConfig } from '../../shared/config';
import { createAgent } from '../../shared/domain/agents/service';
import { BookAppointmentBody } from '../../shared/domain/appointments/schemas';
import { applyCalcomEvent, bookAppointment } from '../../shared/domain/appointments/service';
import { getEvent, listEvents } from '../../shared/domain/events/service';
import {
  fanOutEvent,
  listDeliveries,
  MAX_AUTOMATIC_ATTEMPTS,
  RECOVERY_GRACE_MS,
  RETRY_DELAYS_SECONDS,
  runAutomaticAttempt,
  sweepWebhooks,
  type DeliveryMessage,
} from '../../shared/domain/webhooks/deliveries';
import { createWebhook, ENDPOINTS_CACHE_MS, updateWebhook } from '../../shared/domain/webhooks/service';
import { keys } from '../../shared/db/keys';
import { queryRange } from '../../shared/db/filtered-query';
import { getItem, putNew, transact, updateExisting } from '../../shared/db/store';
import { ManualClock } from '../../shared/local/clock';
import { QueueRunner } from '../../shared/local/queue-runner';
import { logger } from '../../shared/logger';
import { startWebhookReceiver, verifyDelivery, type Received, type WebhookReceiver } from '../support/webhook-receiver';

logger.setLogLevel('SILENT');

/** Records what is sent instead of delivering it: the test decides which message runs, and when. */
class RecordingQueue implements QueuePort {
  sent: { queue: string; body: any; delaySeconds: number }[] = [];
  async send(queue: string, body: unknown, options?: { delaySeconds?: number }) {
    this.sent.push({ queue, body, delaySeconds: options?.delaySeconds ?? 0 });
  }
  /** Messages for one endpoint's deliveries, taken off the list. */
  take(webhookId: string): { body: DeliveryMessage; delaySeconds: number }[] {
    const mine = this.sent.filter((m) => m.queue === 'webhook-delivery' && m.body.webhook_id === webhookId);
    this.sent = this.sent.filter((m) => !mine.includes(m));
    return mine.map(({ body, delaySeconds }) => ({ body, delaySeconds }));
  }
}

const failing: QueuePort = {
  send: async () => {
    throw new Error('process killed before the fan-out message left');
  },
};

let receiver: WebhookReceiver;
let slot = 0;
beforeAll(async () => {
  process.env.ALLOW_LOOPBACK_FETCH = 'true';
  resetConfig();
  receiver = await startWebhookReceiver();
});
afterAll(async () => {
  installLocalQueue(undefined);
  await receiver.close();
});
afterEach(() => {
  installLocalQueue(undefined);
  receiver.clearAnswers();
});

async function orgWithEndpoint(path: string, events: string[] = ['appointment.booked']) {
  const org = uuidv7();
  const agent = await createAgent(org, { name: 'A' } as never);
  const hook = await createWebhook(org, { url: `${receiver.url}${path}`, events: events as never });
  const book = () =>
    bookAppointment(org, BookAppointmentBody.parse({ agent_id: agent.id, attendee_name: 'Ada', duration_minutes: 15, start_time: new Date(Date.UTC(2033, 2, 1, 9) + slot++ * 3_600_000).toISOString() }));
  return { org, hook, book };
}

const at = (path: string) => (r: Received) => r.path === path;
const jobOf = (org: string, webhookId: string, eventId: string) => getItem<Record<string, any>>(keys.webhookJob(org, webhookId, eventId));

describe('outbox', () => {
  it('loses no event when the process dies between the booking and its fan-out: the sweep and the queue deliver it', async () => {
    // Prepare: the booking commits, but its dispatch message never leaves (the "crash").
    const { org, hook, book } = await orgWithEndpoint('/crash');
    installLocalQueue(failing);
    const appointment = await book();
    const [stored] = await queryRange<{ id: string; gsi2pk?: string }>({ pkName: 'pk', pkValue: keys.partition(org), skName: 'sk', skPrefix: 'EVENT#' }, 10);
    expect(stored!.gsi2pk).toMatch(/^EVENTQ#/);
    const runner = new QueueRunner();
    installLocalQueue(runner);
    try {
      // Not yet: a dispatch may still be on its way for 30 s.
      await sweepWebhooks(Date.now());
      await runner.drain();
      expect(receiver.received.filter(at('/crash'))).toHaveLength(0);
      // Act: the minute sweep after 30 s, then the queues (the real job handlers).
      const summary = await sweepWebhooks(Date.now() + 31_000);
      expect(summary.events).toBeGreaterThanOrEqual(1);
      await runner.waitForIdle(20_000);
      // Assess
      const [delivery] = await receiver.waitFor(1, at('/crash'));
      const event = verifyDelivery(hook.secret, delivery!) as { id: string; type: string; data: { id: string } };
      expect(event).toMatchObject({ id: stored!.id, type: 'appointment.booked', data: { id: appointment.id } });
      expect(await getItem(keys.event(org, stored!.id))).not.toHaveProperty('gsi2pk');
      expect((await getEvent(org, stored!.id)).id).toBe(stored!.id);
    } finally {
      await runner.stop();
    }
  });
});

describe('a new endpoint', () => {
  it('makes the webhook sweep due once other containers\' copies of the endpoints have lapsed, not at its 15-minute horizon', async () => {
    // Prepare: the sweep's marker far ahead (an idle platform).
    const far = new Date(Date.now() + 14 * 60_000).toISOString();
    await transact([updateExisting(keys.sweepMarker('webhook-sweep'), { next_due_at: far })]).catch(async () => transact([putNew({ ...keys.sweepMarker('webhook-sweep'), next_due_at: far })]));
    // Act
    const before = Date.now();
    await orgWithEndpoint('/new');
    // Assess: due a copy's life (60 s) and a margin after the creation.
    const marker = await getItem<{ next_due_at: string }>(keys.sweepMarker('webhook-sweep'));
    const dueIn = Date.parse(marker!.next_due_at) - before;
    expect(dueIn).toBeGreaterThanOrEqual(ENDPOINTS_CACHE_MS);
    expect(dueIn).toBeLessThan(ENDPOINTS_CACHE_MS + 60_000);
  });
});

describe('retry schedule', () => {
  it('retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (30 min+ through the due index), then gives up', async () => {
    // Prepare
    const { org, hook, book } = await orgWithEndpoint('/down');
    const queue = new RecordingQueue();
    installLocalQueue(queue);
    const clock = new ManualClock(Date.now());
    receiver.answer(...Array(MAX_AUTOMATIC_ATTEMPTS).fill(503));
    await book();
    const fanout = queue.sent.find((m) => m.queue === 'event-fanout' && m.body.organization_id === org)!;
    await fanOutEvent(org, fanout.body.event_id, clock.now());
    let [message] = queue.take(hook.id);
    expect(message).toEqual({ body: { organization_id: org, webhook_id: hook.id, event_id: fanout.body.event_id, attempt: 1 }, delaySeconds: 0 });

    // Act + Assess, attempt by attempt
    for (let attempt = 1; attempt <= MAX_AUTOMATIC_ATTEMPTS; attempt++) {
      expect(await runAutomaticAttempt(message!.body, () => clock.now())).toBe(attempt < MAX_AUTOMATIC_ATTEMPTS ? 'retry' : 'given-up');
      if (attempt === MAX_AUTOMATIC_ATTEMPTS) break;
      const delay = RETRY_DELAYS_SECONDS[attempt - 1]!;
      const job = await jobOf(org, hook.id, fanout.body.event_id);
      expect(job!.next_attempt_at).toBe(new Date(clock.now() + delay * 1000).toISOString());
      const queued = queue.take(hook.id);
      if (delay <= 900) {
        // SQS carries waits up to 15 minutes.
        expect(queued).toEqual([{ body: { ...message!.body, attempt: attempt + 1 }, delaySeconds: delay }]);
        clock.advance(delay * 1000);
        message = queued[0];
      } else {
        // Longer waits: nothing queued; the minute sweep finds the job when it is due, not before.
        expect(queued).toEqual([]);
        clock.advance(delay * 1000 - 60_000);
        await sweepWebhooks(clock.now());
        expect(queue.take(hook.id)).toEqual([]);
        clock.advance(60_000);
        await sweepWebhooks(clock.now());
        const swept = queue.take(hook.id);
        expect(swept).toEqual([{ body: { ...message!.body, attempt: attempt + 1 }, delaySeconds: 0 }]);
        message = swept[0];
      }
    }
    const job = await jobOf(org, hook.id, fanout.body.event_id);
    expect(job).toMatchObject({ status: 'failed', auto_attempt: MAX_AUTOMATIC_ATTEMPTS, attempts: MAX_AUTOMATIC_ATTEMPTS });
    expect(job).not.toHaveProperty('gsi2pk');
    const log = await listDeliveries(org, hook.id, { limit: 20, offset: 0 });
    expect(log.items.map((d) => [d.attempt, d.status_code, d.succeeded])).toEqual(
      Array.from({ length: MAX_AUTOMATIC_ATTEMPTS }, (_, i) => [MAX_AUTOMATIC_ATTEMPTS - i, 503, false]),
    );
    // Given up: no sweep, however late, sends it again.
    clock.advance(7 * 86_400_000);
    await sweepWebhooks(clock.now());
    expect(queue.take(hook.id)).toEqual([]);
    const deliveries = receiver.received.filter(at('/down'));
    expect(deliveries).toHaveLength(MAX_AUTOMATIC_ATTEMPTS);
    expect(new Set(deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    for (const d of deliveries) verifyDelivery(hook.secret, d);
  });

  it('a queued retry whose message was lost is sent by the sweep after the grace period', async () => {
    const { org, hook, book } = await orgWithEndpoint('/lost');
    const queue = new RecordingQueue();
    installLocalQueue(queue);
    const clock = new ManualClock(Date.now());
    receiver.answer(500);
    await book();
    const fanout = queue.sent.find((m) => m.queue === 'event-fanout' && m.body.organization_id === org)!;
    await fanOutEvent(org, fanout.body.event_id, clock.now());
    const [first] = queue.take(hook.id);
    expect(await runAutomaticAttempt(first!.body, () => clock.now())).toBe('retry');
    expect(queue.take(hook.id)).toHaveLength(1); // the 5 s message, which we now "lose"
    clock.advance(5_000 + RECOVERY_GRACE_MS - 1_000);
    await sweepWebhooks(clock.now());
    expect(queue.take(hook.id)).toEqual([]);
    clock.advance(2_000);
    await sweepWebhooks(clock.now());
    const [again] = queue.take(hook.id);
    expect(again!.body.attempt).toBe(2);
    expect(await runAutomaticAttempt(again!.body, () => clock.now())).toBe('succeeded');
    expect(await jobOf(org, hook.id, fanout.body.event_id)).toMatchObject({ status: 'succeeded', attempts: 2 });
  });

  it('drops pending retries when the endpoint is disabled', async () => {
    const { org, hook, book } = await orgWithEndpoint('/disabled');
    const queue = new RecordingQueue();
    installLocalQueue(queue);
    receiver.answer(500);
    await book();
    const fanout = queue.sent.find((m) => m.queue === 'event-fanout' && m.body.organization_id === org)!;
    await fanOutEvent(org, fanout.body.event_id);
    expect(await runAutomaticAttempt(queue.take(hook.id)[0]!.body)).toBe('retry');
    await updateWebhook(org, hook.id, { enabled: false });
    const [retry] = queue.take(hook.id);
    expect(await runAutomaticAttempt(retry!.body)).toBe('dropped');
    expect(await jobOf(org, hook.id, fanout.body.event_id)).toMatchObject({ status: 'dropped' });
    expect(receiver.received.filter(at('/disabled'))).toHaveLength(1);
  });
});

describe('idempotency under duplicate messages', () => {
  it('fan-out writes one job per endpoint and a delivery is sent once, however often the messages come', async () => {
    // Prepare: two endpoints in one organization.
    const { org, hook, book } = await orgWithEndpoint('/dup-a');
    const second = await createWebhook(org, { url: `${receiver.url}/dup-b`, events: ['*'] });
    const queue = new RecordingQueue();
    installLocalQueue(queue);
    await book();
    const fanout = queue.sent.find((m) => m.queue === 'event-fanout' && m.body.organization_id === org)!;
    // Act: the same fan-out message three times, two of them at once.
    const results = await Promise.all([fanOutEvent(org, fanout.body.event_id), fanOutEvent(org, fanout.body.event_id)]);
    const late = await fanOutEvent(org, fanout.body.event_id);
    // Assess
    expect(results.reduce((n, r) => n + r.jobs, 0) + late.jobs).toBe(2);
    const [a] = queue.take(hook.id);
    expect(queue.take(second.id)).toHaveLength(1);
    expect(queue.take(hook.id)).toEqual([]);
    // The same delivery message three times, two at once.
    const outcomes = await Promise.all([runAutomaticAttempt(a!.body), runAutomaticAttempt(a!.body)]);
    expect(outcomes.filter((o) => o === 'succeeded')).toHaveLength(1);
    expect(outcomes.filter((o) => o !== 'succeeded')).toEqual([expect.stringMatching(/^(claimed|stale)$/)]);
    expect(await runAutomaticAttempt(a!.body)).toBe('stale');
    expect(receiver.received.filter(at('/dup-a'))).toHaveLength(1);
    expect((await listDeliveries(org, hook.id, { limit: 20, offset: 0 })).meta.total).toBe(1);
  });
});

describe('sources', () => {
  it('publishes appointment.booked and appointment.cancelled for Cal.com-synced changes, once each', async () => {
    // Prepare
    const org = uuidv7();
    const agent = await createAgent(org, { name: 'A' } as never);
    const queue = new RecordingQueue();
    installLocalQueue(queue);
    const payload = { uid: `cal-${org}`, startTime: '2033-04-01T09:00:00Z', endTime: '2033-04-01T09:30:00Z', metadata: { agent_id: agent.id }, attendees: [{ name: 'Ada', email: 'ada@example.com' }] };
    // Act: the creation webhook twice (Cal.com retries), then the cancellation.
    const created = await applyCalcomEvent(org, { triggerEvent: 'BOOKING_CREATED', payload });
    await applyCalcomEvent(org, { triggerEvent: 'BOOKING_CREATED', payload });
    await applyCalcomEvent(org, { triggerEvent: 'BOOKING_CANCELLED', payload: { uid: payload.uid, cancellationReason: 'Sick' } });
    // Assess
    const events = await listEvents(org, { limit: 20, offset: 0 });
    expect(events.items.map((e) => [e.type, e.data.id])).toEqual([
      ['appointment.cancelled', created.appointment_id],
      ['appointment.booked', created.appointment_id],
    ]);
    expect(events.items[0]!.data).toMatchObject({ status: 'cancelled', cancellation_reason: 'Sick', provider: 'calcom' });
    expect(queue.sent.filter((m) => m.queue === 'event-fanout').map((m) => m.body.event_id).sort()).toEqual(events.items.map((e) => e.id).sort());
  });
});

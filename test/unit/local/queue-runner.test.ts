import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';
import type { QueueJob } from '../../../shared/jobs/definition';
import { ManualClock } from '../../../shared/local/clock';
import { QueueRunner, type SqsHandler } from '../../../shared/local/queue-runner';

function queueJob(over: Partial<QueueJob> = {}): QueueJob {
  return {
    kind: 'queue',
    name: 'work',
    entry: 'functions/jobs/work.ts',
    description: 'test queue',
    visibilityTimeoutSeconds: 30,
    maxReceiveCount: 3,
    batchSize: 10,
    access: {},
    ...over,
  };
}

/** A runner on a manual clock whose only queue feeds `handler`; `events` records every batch. */
function setup(handler: SqsHandler = async () => undefined, over: Partial<QueueJob> = {}) {
  const clock = new ManualClock();
  const events: SQSEvent[] = [];
  const logs: string[] = [];
  const runner = new QueueRunner({
    jobs: [queueJob(over)],
    clock,
    log: (line) => logs.push(line),
    loadHandler: async <H>() =>
      (async (event: SQSEvent, context: unknown) => {
        events.push(structuredClone(event));
        return handler(event, context as never);
      }) as H,
  });
  const bodies = () => events.map((e) => e.Records.map((r) => JSON.parse(r.body)));
  return { clock, runner, events, logs, bodies };
}

const fail = async (): Promise<SQSBatchResponse> => {
  throw new Error('worker broke');
};

afterEach(() => jest.restoreAllMocks());

describe('QueueRunner', () => {
  it('delivers a sent message as an SQS event', async () => {
    // Prepare
    const { runner, events } = setup();
    // Act
    await runner.send('work', { contact: 'c-1' });
    await runner.drain();
    // Assess
    expect(events).toHaveLength(1);
    const [record] = events[0]!.Records;
    expect(record).toMatchObject({
      body: '{"contact":"c-1"}',
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:local:000000000000:work',
      attributes: { ApproximateReceiveCount: '1' },
    });
    expect(record!.messageId).toMatch(/^[0-9a-f-]{36}$/);
    expect(record!.receiptHandle).toEqual(expect.any(String));
    expect(runner.stats().work).toMatchObject({ sent: 1, received: 1, deleted: 1, visible: 0, invisible: 0 });
  });

  it('holds a delayed message until its delay has passed', async () => {
    // Prepare
    const { runner, clock, bodies } = setup();
    await runner.send('work', 'later', { delaySeconds: 10 });
    await runner.send('work', 'now');
    // Act
    await runner.drain();
    const beforeDelay = bodies().flat();
    clock.advance(9_999);
    await runner.drain();
    const justBefore = bodies().flat();
    clock.advance(1);
    await runner.drain();
    // Assess
    expect(beforeDelay).toEqual(['now']);
    expect(justBefore).toEqual(['now']);
    expect(bodies().flat()).toEqual(['now', 'later']);
  });

  it('redelivers a message after the visibility timeout when the handler throws', async () => {
    // Prepare
    let calls = 0;
    const { runner, clock, events } = setup(async () => {
      calls++;
      if (calls === 1) throw new Error('transient');
      return { batchItemFailures: [] };
    });
    await runner.send('work', { n: 1 });
    // Act
    await runner.drain();
    clock.advance(29_999);
    await runner.drain();
    const deliveriesBeforeTimeout = events.length;
    clock.advance(1);
    await runner.drain();
    // Assess
    expect(deliveriesBeforeTimeout).toBe(1);
    expect(events).toHaveLength(2);
    expect(events[1]!.Records[0]!.messageId).toBe(events[0]!.Records[0]!.messageId);
    expect(events[1]!.Records[0]!.attributes.ApproximateReceiveCount).toBe('2');
    expect(events[1]!.Records[0]!.receiptHandle).not.toBe(events[0]!.Records[0]!.receiptHandle);
    expect(runner.stats().work).toMatchObject({ failed: 1, deleted: 1, visible: 0, invisible: 0 });
  });

  it('retries only the records named in batchItemFailures', async () => {
    // Prepare
    let first = true;
    const { runner, clock, bodies } = setup(async (event) => {
      if (!first) return { batchItemFailures: [] };
      first = false;
      const bad = event.Records.filter((r) => JSON.parse(r.body) === 'b');
      return { batchItemFailures: bad.map((r) => ({ itemIdentifier: r.messageId })) };
    });
    await runner.send('work', 'a');
    await runner.send('work', 'b');
    await runner.send('work', 'c');
    // Act
    await runner.drain();
    clock.advance(30_000);
    await runner.drain();
    // Assess
    expect(bodies()).toEqual([['a', 'b', 'c'], ['b']]);
    expect(runner.stats().work).toMatchObject({ deleted: 3, failed: 1 });
  });

  it('retries the whole batch when batchItemFailures names an unknown id', async () => {
    // Prepare
    let first = true;
    const { runner, clock, bodies } = setup(async () => {
      if (!first) return undefined;
      first = false;
      return { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] };
    });
    await runner.send('work', 'a');
    await runner.send('work', 'b');
    // Act
    await runner.drain();
    clock.advance(30_000);
    await runner.drain();
    // Assess
    expect(bodies()).toEqual([['a', 'b'], ['a', 'b']]);
  });

  it('moves a message to the dead letters after maxReceiveCount failed receives', async () => {
    // Prepare
    const { runner, clock, events, logs } = setup(fail, { maxReceiveCount: 3 });
    await runner.send('work', { id: 'poison' });
    // Act
    for (let i = 0; i < 5; i++) {
      await runner.drain();
      clock.advance(30_000);
    }
    await runner.drain();
    // Assess
    expect(events.map((e) => e.Records[0]!.attributes.ApproximateReceiveCount)).toEqual(['1', '2', '3']);
    const dead = runner.deadLetters('work');
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ body: '{"id":"poison"}', receiveCount: 3, lastError: 'worker broke' });
    expect(runner.stats().work).toMatchObject({ deadLetters: 1, visible: 0, invisible: 0, inFlight: 0 });
    expect(logs.some((l) => l.includes('dead-letter'))).toBe(true);
  });

  it('delivers in batches of at most batchSize, one batch in flight at a time', async () => {
    // Prepare
    let inFlight = 0;
    let maxInFlight = 0;
    const { runner, events } = setup(
      async () => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
      },
      { batchSize: 10 },
    );
    // Act
    await Promise.all(Array.from({ length: 25 }, (_, i) => runner.send('work', i)));
    await runner.drain();
    // Assess
    expect(events.map((e) => e.Records.length)).toEqual([10, 10, 5]);
    expect(events.flatMap((e) => e.Records.map((r) => JSON.parse(r.body)))).toEqual(Array.from({ length: 25 }, (_, i) => i));
    expect(maxInFlight).toBe(1);
  });

  it('fails a batch whose handler outlives its timeout', async () => {
    // Prepare
    let calls = 0;
    const { runner, clock } = setup(
      () => {
        calls++;
        return calls === 1 ? new Promise<void>(() => undefined) : undefined;
      },
      { timeoutSeconds: 5 },
    );
    await runner.send('work', 'slow');
    // Act
    const draining = runner.drain();
    await new Promise((r) => setImmediate(r));
    clock.advance(5_000);
    await draining;
    clock.advance(25_000);
    await runner.drain();
    // Assess
    expect(calls).toBe(2);
    expect(runner.stats().work).toMatchObject({ failed: 1, deleted: 1 });
  });

  it("times a batch out after the function's timeout (10 s by default, as deployed), not the visibility timeout", async () => {
    // Prepare
    const { runner, clock } = setup(() => new Promise<void>(() => undefined), { visibilityTimeoutSeconds: 60 });
    await runner.send('work', 'slow');
    // Act
    const draining = runner.drain();
    await new Promise((r) => setImmediate(r));
    clock.advance(10_000);
    await draining;
    // Assess
    expect(runner.stats().work).toMatchObject({ failed: 1, invisible: 1 });
  });

  it('refuses what SQS would refuse: unknown queue, bad delay, oversized body', async () => {
    // Prepare
    const { runner } = setup();
    // Act
    const results = await Promise.allSettled([
      runner.send('nope', {}),
      runner.send('work', {}, { delaySeconds: 901 }),
      runner.send('work', 'x'.repeat(256 * 1024)),
    ]);
    // Assess
    expect(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'sent'))).toEqual([
      expect.stringContaining('Unknown queue "nope"'),
      expect.stringContaining('DelaySeconds'),
      expect.stringContaining('exceeds'),
    ]);
  });

  it('waits for the batch in flight on stop, then refuses new messages', async () => {
    // Prepare
    let finished = false;
    const { runner } = setup(async () => {
      await new Promise((r) => setImmediate(r));
      finished = true;
    });
    await runner.send('work', 'x');
    const draining = runner.drain();
    // Act
    await runner.stop();
    await draining;
    const late = runner.send('work', 'y');
    // Assess
    expect(finished).toBe(true);
    await expect(late).rejects.toThrow('stopped');
  });

  it('lets a batch in flight at stop send (kept, not delivered), as SQS accepts a message with no consumer', async () => {
    // Prepare
    let sentDuringStop: unknown = 'not tried';
    const { runner, bodies } = setup(async (event) => {
      if (JSON.parse(event.Records[0]!.body) !== 'first') return;
      await new Promise((r) => setImmediate(r));
      sentDuringStop = await runner.send('work', 'follow-up').then(() => 'sent', (e: Error) => e.message);
    });
    await runner.send('work', 'first');
    const draining = runner.drain();
    // Act
    await runner.stop();
    await draining;
    // Assess
    expect(sentDuringStop).toBe('sent');
    expect(bodies()).toEqual([['first']]);
    expect(runner.stats().work).toMatchObject({ visible: 1, inFlight: 0 });
  });

  it('waitForIdle resolves once delayed messages have been delivered (real clock)', async () => {
    // Prepare
    const delivered: string[] = [];
    const runner = new QueueRunner({
      jobs: [queueJob()],
      timeScale: 0.001,
      loadHandler: async <H>() =>
        (async (event: SQSEvent) => {
          delivered.push(...event.Records.map((r) => JSON.parse(r.body) as string));
        }) as H,
    });
    await runner.send('work', 'delayed', { delaySeconds: 5 });
    // Act
    await runner.waitForIdle(5_000);
    // Assess
    expect(delivered).toEqual(['delayed']);
    await runner.stop();
  });
});

import { createHash, randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { runAs } from '../access/enforce';
import type { QueuePort, SendOptions } from '../adapters/queue';
import { jobTimeoutSeconds, type QueueJob } from '../jobs/definition';
import { jobs as registeredJobs } from '../jobs/registry';
import { systemClock, type Clock } from './clock';
import { createHandlerLoader, type HandlerLoader } from './handler-loader';
import { localFaults } from './faults';
import { createLambdaContext } from './lambda-context';

/** An SQS-triggered Lambda handler, as the entry files of queue jobs export it. */
export type SqsHandler = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void> | SQSBatchResponse | void;

export interface QueueRunnerOptions {
  /** Default: the queue jobs of `shared/jobs/registry.ts`. */
  jobs?: QueueJob[];
  /** Default: imports each job's entry file once. */
  loadHandler?: HandlerLoader;
  /** Default: real time. Tests pass a `ManualClock`. */
  clock?: Clock;
  /**
   * Multiplies every delay and visibility timeout (default 1). Acceptance tests use a small
   * factor so a 30 s redelivery takes 0.3 s; handler timeouts are not scaled.
   */
  timeScale?: number;
  log?: (line: string) => void;
}

/** A message that exhausted its receives (`maxReceiveCount`). */
export interface DeadLetter {
  messageId: string;
  body: string;
  receiveCount: number;
  sentAt: number;
  /** The error of the last failed delivery, when the handler threw. */
  lastError?: string;
}

export interface QueueStats {
  /** Deliverable now. */
  visible: number;
  /** Waiting for their delay or visibility timeout to pass. */
  invisible: number;
  /** In the batch the handler is working on. */
  inFlight: number;
  deadLetters: number;
  sent: number;
  /** Deliveries (a message delivered twice counts twice). */
  received: number;
  /** Deliveries that ended in failure (reported or thrown). */
  failed: number;
  deleted: number;
  /** Handled, yet delivered again (LOCAL_FAULTS sqs.redeliver). */
  redelivered: number;
}

interface Message {
  messageId: string;
  body: string;
  md5: string;
  sentAt: number;
  seq: number;
  visibleAt: number;
  receiveCount: number;
  firstReceivedAt?: number;
  receiptHandle?: string;
  inFlight: boolean;
  lastError?: string;
  attributes?: Record<string, string>;
}

interface QueueState {
  job: QueueJob;
  messages: Message[];
  dead: DeadLetter[];
  inFlight?: Promise<void>;
  wakeTimer?: unknown;
  wakeAt?: number;
  kickPending: boolean;
  counts: { sent: number; received: number; failed: number; deleted: number; redelivered: number };
}

/** SQS's limits, enforced locally so a message that AWS would refuse fails here first. */
const MAX_DELAY_SECONDS = 900;
const MAX_BODY_BYTES = 256 * 1024;

/**
 * An in-process queue with the SQS semantics our workers rely on: delay, visibility timeout,
 * receive count, redelivery of failed messages, a dead-letter list after `maxReceiveCount`
 * and partial batch failure (`batchItemFailures`). One batch is in flight per queue, as a
 * Lambda event source with a concurrency of one.
 */
export class QueueRunner implements QueuePort {
  private readonly queues = new Map<string, QueueState>();
  private readonly clock: Clock;
  private readonly loadHandler: HandlerLoader;
  private readonly timeScale: number;
  private readonly log: (line: string) => void;
  private seq = 0;
  /** No more deliveries (set when `stop` begins). */
  private stopping = false;
  /** Sends refused (set once the batches in flight at `stop` have settled). */
  private stopped = false;

  constructor(options: QueueRunnerOptions = {}) {
    const jobs = options.jobs ?? registeredJobs.filter((j): j is QueueJob => j.kind === 'queue');
    for (const job of jobs) {
      this.queues.set(job.name, { job, messages: [], dead: [], kickPending: false, counts: { sent: 0, received: 0, failed: 0, deleted: 0, redelivered: 0 } });
    }
    this.clock = options.clock ?? systemClock;
    this.loadHandler = options.loadHandler ?? createHandlerLoader();
    this.timeScale = options.timeScale ?? 1;
    this.log = options.log ?? (() => undefined);
  }

  /** Enqueues `body` (JSON-encoded, as the SQS adapter does) on the named queue. */
  async send(queue: string, body: unknown, options: SendOptions = {}): Promise<void> {
    if (this.stopped) throw new Error(`Queue runner is stopped: cannot send to "${queue}".`);
    const q = this.queues.get(queue);
    if (!q) throw new Error(`Unknown queue "${queue}": declare it in shared/jobs/registry.ts.`);
    const delaySeconds = options.delaySeconds ?? 0;
    if (!Number.isInteger(delaySeconds) || delaySeconds < 0 || delaySeconds > MAX_DELAY_SECONDS) {
      throw new Error(`DelaySeconds must be an integer from 0 to ${MAX_DELAY_SECONDS}, got ${delaySeconds}.`);
    }
    const text = JSON.stringify(body);
    if (text === undefined) throw new Error(`Message to "${queue}" has no JSON representation.`);
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw new Error(`Message to "${queue}" exceeds SQS's ${MAX_BODY_BYTES} bytes.`);
    if (localFaults()?.hit('sqs.send')) {
      throw Object.assign(new Error(`SendMessage to "${queue}" failed: we encountered an internal error, please try again (injected)`), { name: 'InternalError', $fault: 'server', $metadata: { httpStatusCode: 500 } });
    }
    const now = this.clock.now();
    q.messages.push({
      messageId: randomUUID(),
      body: text,
      md5: createHash('md5').update(text).digest('hex'),
      sentAt: now,
      seq: this.seq++,
      visibleAt: now + this.scaled(delaySeconds),
      receiveCount: 0,
      inFlight: false,
      ...(options.attributes ? { attributes: { ...options.attributes } } : {}),
    });
    q.counts.sent++;
    this.schedule(q);
  }

  /**
   * Delivers every message visible now, batch after batch, until none is visible and no batch
   * is in flight. Delayed and invisible messages wait for the clock (advance a ManualClock).
   */
  async drain(): Promise<void> {
    for (;;) {
      const running = [...this.queues.values()].map((q) => this.pump(q)).filter((p): p is Promise<void> => !!p);
      if (!running.length) return;
      await Promise.all(running);
    }
  }

  /**
   * Waits, in real time, until every queue is empty (nothing visible, delayed, invisible or in
   * flight; dead letters do not count). Rejects after `timeoutMs` with the queues' stats.
   */
  async waitForIdle(timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.drain();
      if ([...this.queues.values()].every((q) => q.messages.length === 0 && !q.inFlight)) return;
      if (Date.now() > deadline) {
        throw new Error(`Queues not idle after ${timeoutMs} ms: ${JSON.stringify(this.stats())}`);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /**
   * Stops delivering, waits for batches in flight, then refuses further sends. Idempotent. A
   * batch in flight may still send (SQS accepts a message whether or not anything consumes it,
   * as a Lambda finishing its invocation during a deploy does): those messages are kept, not
   * delivered.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const q of this.queues.values()) {
      if (q.wakeTimer !== undefined) this.clock.clearTimeout(q.wakeTimer);
      q.wakeTimer = undefined;
    }
    await Promise.all([...this.queues.values()].map((q) => q.inFlight));
    this.stopped = true;
  }

  /** Messages moved to the queue's dead-letter list, oldest first. */
  deadLetters(queue: string): DeadLetter[] {
    return [...(this.queues.get(queue)?.dead ?? [])];
  }

  /** Per-queue counts. */
  stats(): Record<string, QueueStats> {
    const now = this.clock.now();
    const result: Record<string, QueueStats> = {};
    for (const [name, q] of this.queues) {
      const waiting = q.messages.filter((m) => !m.inFlight);
      result[name] = {
        visible: waiting.filter((m) => m.visibleAt <= now).length,
        invisible: waiting.filter((m) => m.visibleAt > now).length,
        inFlight: q.messages.length - waiting.length,
        deadLetters: q.dead.length,
        ...q.counts,
      };
    }
    return result;
  }

  private scaled(seconds: number): number {
    return seconds * 1000 * this.timeScale;
  }

  /** Starts a batch if none is in flight and messages are visible; returns the batch in flight. */
  private pump(q: QueueState): Promise<void> | undefined {
    if (q.inFlight) return q.inFlight;
    if (this.stopping) return undefined;
    const now = this.clock.now();
    const visible = q.messages.filter((m) => m.visibleAt <= now).sort((a, b) => a.visibleAt - b.visibleAt || a.seq - b.seq);
    // As SQS's redrive policy: a message received maxReceiveCount times moves to the
    // dead-letter queue when it would be received once more.
    const exhausted = visible.filter((m) => m.receiveCount >= q.job.maxReceiveCount);
    for (const m of exhausted) this.moveToDeadLetters(q, m);
    const batch = visible.filter((m) => m.receiveCount < q.job.maxReceiveCount).slice(0, q.job.batchSize);
    if (!batch.length) {
      this.schedule(q);
      return undefined;
    }
    q.inFlight = this.deliver(q, batch).finally(() => {
      q.inFlight = undefined;
      this.schedule(q);
    });
    return q.inFlight;
  }

  private async deliver(q: QueueState, batch: Message[]): Promise<void> {
    const { job } = q;
    const receivedAt = this.clock.now();
    for (const m of batch) {
      m.inFlight = true;
      m.receiveCount++;
      m.firstReceivedAt ??= receivedAt;
      m.receiptHandle = Buffer.from(`${m.messageId}:${randomUUID()}`).toString('base64');
      m.visibleAt = receivedAt + this.scaled(job.visibilityTimeoutSeconds);
    }
    q.counts.received += batch.length;
    const event: SQSEvent = { Records: batch.map((m) => this.toRecord(job.name, m)) };
    // The function's timeout, as the stack sets it (not the visibility timeout, six times longer).
    const timeoutMs = jobTimeoutSeconds(job) * 1000;
    let failed: Set<string>;
    let error: string | undefined;
    try {
      const handler = await this.loadHandler<SqsHandler>(job.entry);
      const context = createLambdaContext({ functionName: job.name, timeoutMs, memoryMb: job.memoryMb, now: () => this.clock.now() });
      const run = runAs({ name: job.name, access: job.access }, () => Promise.resolve(handler(event, context)));
      const result = await this.withTimeout(run, timeoutMs, job.name);
      failed = failedIds(result, batch);
      // The container was lost before Lambda deleted the batch: every message comes back, whatever the handler did.
      if (localFaults()?.hit('lambda.recycle')) {
        failed = new Set(batch.map((m) => m.messageId));
        error = 'the container was recycled during the batch (injected)';
      }
    } catch (err) {
      failed = new Set(batch.map((m) => m.messageId));
      error = err instanceof Error ? err.message : String(err);
      // Powertools' FullBatchFailureError names its records' errors only in `recordErrors`: the line says them.
      const describe = (e: unknown): string => (e instanceof Error ? `${e.name}: ${e.message}${e.cause ? ` (${describe(e.cause)})` : ''}` : String(e));
      const causes = ((err as { recordErrors?: unknown[] }).recordErrors ?? []).map(describe);
      this.log(`queue ${job.name}: batch of ${batch.length} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}${causes.length ? `\n  caused by: ${causes.join('\n  caused by: ')}` : ''}`);
    }
    for (const m of batch) {
      m.inFlight = false;
      if (failed.has(m.messageId)) {
        // Visible again when the visibility timeout that started at receipt runs out.
        m.lastError = error;
        q.counts.failed++;
      } else if (localFaults()?.hit('sqs.redeliver')) {
        // At-least-once: handled, yet delivered again when its visibility timeout runs out.
        q.counts.redelivered++;
      } else {
        q.messages.splice(q.messages.indexOf(m), 1);
        q.counts.deleted++;
      }
    }
  }

  private toRecord(queue: string, m: Message): SQSRecord {
    return {
      messageId: m.messageId,
      receiptHandle: m.receiptHandle!,
      body: m.body,
      attributes: {
        ApproximateReceiveCount: String(m.receiveCount),
        SentTimestamp: String(m.sentAt),
        SenderId: 'LOCAL',
        ApproximateFirstReceiveTimestamp: String(m.firstReceivedAt),
      },
      // As SQS delivers string message attributes (the trace context travels in them).
      messageAttributes: Object.fromEntries(Object.entries(m.attributes ?? {}).map(([k, v]) => [k, { dataType: 'String', stringValue: v, stringListValues: [], binaryListValues: [] }])),
      md5OfBody: m.md5,
      eventSource: 'aws:sqs',
      eventSourceARN: `arn:aws:sqs:local:000000000000:${queue}`,
      awsRegion: 'local',
    };
  }

  private moveToDeadLetters(q: QueueState, m: Message): void {
    q.messages.splice(q.messages.indexOf(m), 1);
    q.dead.push({ messageId: m.messageId, body: m.body, receiveCount: m.receiveCount, sentAt: m.sentAt, ...(m.lastError ? { lastError: m.lastError } : {}) });
    this.log(`queue ${q.job.name}: message ${m.messageId} moved to the dead-letter list after ${m.receiveCount} receives`);
  }

  private withTimeout<T>(work: Promise<T>, ms: number, name: string): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = this.clock.setTimeout(() => reject(new Error(`${name} timed out after ${ms} ms`)), ms);
      work.then(
        (value) => {
          this.clock.clearTimeout(timer);
          resolve(value);
        },
        (err: unknown) => {
          this.clock.clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  /** Arranges the next pump: soon if a message is visible, else when the earliest one becomes visible. */
  private schedule(q: QueueState): void {
    if (this.stopping || q.inFlight) return;
    const now = this.clock.now();
    const waiting = q.messages.filter((m) => !m.inFlight);
    if (waiting.some((m) => m.visibleAt <= now)) {
      if (q.kickPending) return;
      q.kickPending = true;
      // A macrotask later, so messages sent in the same tick share a batch.
      setImmediate(() => {
        q.kickPending = false;
        void this.pump(q);
      });
      return;
    }
    const next = Math.min(...waiting.map((m) => m.visibleAt));
    if (!Number.isFinite(next) || q.wakeAt === next) return;
    if (q.wakeTimer !== undefined) this.clock.clearTimeout(q.wakeTimer);
    q.wakeAt = next;
    q.wakeTimer = this.clock.setTimeout(() => {
      q.wakeTimer = undefined;
      q.wakeAt = undefined;
      void this.pump(q);
    }, next - now);
  }
}

/**
 * The ids Lambda would retry: those in `batchItemFailures`, or the whole batch when the
 * response names an id that is empty or not in the batch (Lambda treats that as a failure).
 */
function failedIds(result: SQSBatchResponse | void, batch: Message[]): Set<string> {
  const all = new Set(batch.map((m) => m.messageId));
  const failures = result && Array.isArray(result.batchItemFailures) ? result.batchItemFailures : [];
  const ids = new Set<string>();
  for (const failure of failures) {
    const id = failure?.itemIdentifier;
    if (!id || !all.has(id)) return all;
    ids.add(id);
  }
  return ids;
}

import type { Access } from '../access/declaration';

/** A worker fed by a queue (SQS in AWS, the in-process runner locally). */
export interface QueueJob {
  kind: 'queue';
  name: string;
  entry: string;
  description: string;
  /**
   * Seconds a received message stays invisible before it is delivered again: at least
   * QUEUE_RULES.visibilityTimeoutFactor times the function's timeout (AWS's advice for an SQS
   * event source, so a batch that is retried by Lambda is not also redelivered by SQS).
   */
  visibilityTimeoutSeconds: number;
  /** Deliveries before a message moves to the dead-letter queue: at least QUEUE_RULES.minMaxReceiveCount. */
  maxReceiveCount: number;
  batchSize: number;
  /**
   * Most concurrent invocations the queue may drive (the event source mapping's maximum
   * concurrency, 2 to 1000); default QUEUE_RULES.defaultMaxConcurrency. A cap keeps a burst of
   * background work from taking the account's concurrency from the API.
   */
  maxConcurrency?: number;
  access: Access;
  timeoutSeconds?: number;
  memoryMb?: number;
}

/** A handler fired on a fixed rate (EventBridge Scheduler in AWS, a timer locally). */
export interface ScheduledJob {
  kind: 'schedule';
  name: string;
  entry: string;
  description: string;
  rateMinutes: number;
  access: Access;
  timeoutSeconds?: number;
  memoryMb?: number;
}

export type JobDefinition = QueueJob | ScheduledJob;

/** A function's timeout when its declaration sets none (lib/api-function.ts uses the same). */
export const DEFAULT_TIMEOUT_SECONDS = 10;

/** The rules every queue job obeys; the stack refuses a job that breaks one and an infra test checks the template. */
export const QUEUE_RULES = {
  visibilityTimeoutFactor: 6,
  minMaxReceiveCount: 5,
  defaultMaxConcurrency: 10,
  /** Lambda's bounds for an SQS event source mapping's maximum concurrency. */
  maxConcurrencyRange: [2, 1000] as const,
};

/** The timeout of a job's function, in seconds. */
export function jobTimeoutSeconds(job: JobDefinition): number {
  return job.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
}

/** The concurrency cap of a queue job's consumer. */
export function maxConcurrencyOf(job: QueueJob): number {
  return job.maxConcurrency ?? QUEUE_RULES.defaultMaxConcurrency;
}

/** What is wrong with a queue job's settings (empty when it obeys QUEUE_RULES). */
export function queueJobProblems(job: QueueJob): string[] {
  const problems: string[] = [];
  const timeout = jobTimeoutSeconds(job);
  const { visibilityTimeoutFactor: factor, minMaxReceiveCount, maxConcurrencyRange: [low, high] } = QUEUE_RULES;
  if (job.visibilityTimeoutSeconds < factor * timeout) {
    problems.push(`visibilityTimeoutSeconds (${job.visibilityTimeoutSeconds}) must be at least ${factor} × the function timeout (${timeout} s) = ${factor * timeout}`);
  }
  if (job.maxReceiveCount < minMaxReceiveCount) problems.push(`maxReceiveCount (${job.maxReceiveCount}) must be at least ${minMaxReceiveCount}`);
  const cap = maxConcurrencyOf(job);
  if (!Number.isInteger(cap) || cap < low || cap > high) problems.push(`maxConcurrency (${cap}) must be an integer from ${low} to ${high}`);
  return problems;
}

/** Environment variable holding a queue's URL in a deployed stack (the queue adapter reads it, so it lives there). */
export { queueUrlVariable } from '../adapters/queue';

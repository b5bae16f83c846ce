import type { Access } from '../http/operation';

/** A worker fed by a queue (SQS in AWS, the in-process runner locally). */
export interface QueueJob {
  kind: 'queue';
  name: string;
  entry: string;
  description: string;
  /** Seconds a received message stays invisible before it is delivered again. */
  visibilityTimeoutSeconds: number;
  /** Deliveries before a message moves to the dead-letter queue. */
  maxReceiveCount: number;
  batchSize: number;
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

/** Environment variable holding a queue's URL in a deployed stack. */
export function queueUrlVariable(queueName: string): string {
  return `QUEUE_URL_${queueName.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

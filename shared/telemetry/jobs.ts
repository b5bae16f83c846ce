import type { SQSRecord } from 'aws-lambda';
import { flushBeforeAnswer } from './lambda-extension';
import { contextFrom, flushTracing, inSpan, inStoredTrace, SpanKind, startTracing } from './tracing';
import { logsWritten } from '../logger';

/**
 * Runs one queue message's work in a `process` consumer span that continues the trace of the
 * request or job that sent it (the `traceparent` message attribute the queue adapter set), so
 * a call's dial, its callbacks, its analysis and its webhook deliveries join one trace.
 */
export async function inMessageSpan<T>(record: SQSRecord, work: () => Promise<T>): Promise<T> {
  if (!(await startTracing())) return work();
  const carrier: Record<string, string> = {};
  for (const [key, value] of Object.entries(record.messageAttributes ?? {})) if (value?.stringValue) carrier[key] = value.stringValue;
  const queue = record.eventSourceARN?.split(':').pop() ?? 'queue';
  return inSpan(
    `process ${queue}`,
    {
      kind: SpanKind.CONSUMER,
      parent: contextFrom(carrier),
      attributes: { 'messaging.system': 'aws_sqs', 'messaging.operation.type': 'process', 'messaging.destination.name': queue, 'messaging.message.id': record.messageId },
    },
    work,
  );
}

/** After a batch, in a real Lambda, export the spans before the process is frozen (unless the extension exports them after: lambda-extension.ts). */
export async function afterInvocation(): Promise<void> {
  if (flushBeforeAnswer()) await flushTracing();
}

/**
 * A scheduled job's run (the minute sweeps, the daily renewals) as the root span of a trace of
 * its own, `schedule {name}`: the work it queues carries that trace (queue.ts), so a sweep's
 * retries and dials are found from it. Exported before the process is frozen. Plainly when off.
 */
export function scheduledJob<A extends unknown[]>(name: string, run: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      if (!(await startTracing())) return await run(...args);
      try {
        await inStoredTrace(`schedule ${name}`, undefined, { kind: SpanKind.INTERNAL, attributes: { 'job.name': name, 'job.trigger': 'schedule' } }, () => run(...args));
      } finally {
        await afterInvocation();
      }
    } finally {
      // Its lines are written before it ends, as every handler's (shared/logger.ts).
      await logsWritten();
    }
  };
}

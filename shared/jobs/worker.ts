import { BatchProcessor, EventType, processPartialResponse } from '@aws-lambda-powertools/batch';
import type { Context, SQSEvent, SQSRecord } from 'aws-lambda';
import { clockMs } from '../clock';
import { logger, logsWritten } from '../logger';
import { afterInvocation, inMessageSpan } from '../telemetry/jobs';
import { flushMetrics, recordQueueWait } from '../telemetry/metrics';
import { DELAY_ATTRIBUTE } from '../adapters/queue';

/**
 * Wraps a per-message function as an SQS batch handler: every record is parsed and handled,
 * failures are reported per record (partial batch response) so only they are retried, and
 * one bad record never stops the others. The function must be idempotent (at-least-once).
 */
export function sqsWorker<T>(fn: (message: T, record: SQSRecord) => Promise<void>) {
  const processor = new BatchProcessor(EventType.SQS);
  const recordHandler = async (record: SQSRecord) => {
    recordQueueWait(queueOf(record), queueWaitMs(record));
    let message: T;
    try {
      message = JSON.parse(record.body) as T;
    } catch (err) {
      // A body that is not JSON will never parse: log it and drop it rather than retry forever.
      logger.error('dropping unparseable message', { message_id: record.messageId, error: (err as Error).message });
      return;
    }
    try {
      await inMessageSpan(record, () => fn(message, record));
    } catch (err) {
      // The batch response only says which record failed; the log says why (and the queue retries it).
      logger.error('message failed; it will be retried', { message_id: record.messageId, receive_count: record.attributes?.ApproximateReceiveCount, error: err as Error });
      throw err;
    }
  };
  return async (event: SQSEvent, context: Context) => {
    try {
      return await processPartialResponse(event, recordHandler, processor, { context });
    } finally {
      await flushMetrics();
      await afterInvocation();
      await logsWritten();
    }
  };
}

/** The queue's name as SQS knows it (the last part of its ARN; locally, the job's name). */
const queueOf = (record: SQSRecord) => record.eventSourceARN?.split(':').pop() || 'unknown';

/**
 * How long the message waited: from its send (SentTimestamp, on SQS's clock) plus the delay its
 * sender asked for (the queue adapter's DELAY_ATTRIBUTE) to now. A redelivery counts its retries'
 * wait too: the work was that late.
 */
export function queueWaitMs(record: SQSRecord, nowMs = clockMs()): number {
  const sent = Number(record.attributes?.SentTimestamp);
  if (!Number.isFinite(sent) || sent <= 0) return Number.NaN;
  const delaySeconds = Number(record.messageAttributes?.[DELAY_ATTRIBUTE]?.stringValue ?? 0) || 0;
  return Math.max(0, nowMs - sent - delaySeconds * 1000);
}

import type { SQSClient } from '@aws-sdk/client-sqs';
import { checkQueueSend } from '../access/enforce';
import { UnavailableError } from '../errors';
import { traceAwsClient } from '../telemetry/aws';
import { traceCarrier } from '../telemetry/tracing';

export interface SendOptions {
  /** Seconds before the message becomes visible (SQS allows up to 900). */
  delaySeconds?: number;
  /** String message attributes (the W3C trace context: `traceparent`, `tracestate`), set by `queue()`. */
  attributes?: Record<string, string>;
}

/** Sends job messages; SQS in AWS, the in-process runner in the local runtime. */
export interface QueuePort {
  send(queue: string, body: unknown, options?: SendOptions): Promise<void>;
}

/** The message attribute telling the delay its sender asked for: the worker's QueueWait metric leaves it out (shared/jobs/worker.ts). */
export const DELAY_ATTRIBUTE = 'vap-delay-seconds';

/** The local runtime installs its in-process queue here before serving requests. */
const LOCAL_QUEUE = Symbol.for('vap.localQueue');
type Holder = { [LOCAL_QUEUE]?: QueuePort };

export function installLocalQueue(port: QueuePort | undefined): void {
  (globalThis as Holder)[LOCAL_QUEUE] = port;
}

/** Environment variable holding a queue's URL in a deployed stack (the stack sets it for each queue a function declares). */
export function queueUrlVariable(queueName: string): string {
  return `QUEUE_URL_${queueName.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

let sqs: SQSClient | undefined;

const sqsPort: QueuePort = {
  async send(queue, body, options) {
    const url = process.env[queueUrlVariable(queue)];
    if (!url) throw new Error(`Missing ${queueUrlVariable(queue)}: the function was not granted queue "${queue}".`);
    // Loaded on first send, so functions that never queue anything do not pay for the SQS client at cold start.
    const { SQSClient, SendMessageCommand } = await import('@aws-sdk/client-sqs');
    if (!sqs) {
      sqs = new SQSClient({});
      traceAwsClient(sqs, 'SQS');
    }
    const attributes = Object.entries(options?.attributes ?? {});
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: url,
        MessageBody: JSON.stringify(body),
        DelaySeconds: options?.delaySeconds,
        ...(attributes.length ? { MessageAttributes: Object.fromEntries(attributes.map(([k, v]) => [k, { DataType: 'String', StringValue: v }])) } : {}),
      }),
    );
  },
};

/** The queue port for this process; a send to a queue the current function did not declare is refused as IAM would. */
export function queue(): QueuePort {
  const port = (globalThis as Holder)[LOCAL_QUEUE] ?? sqsPort;
  return {
    async send(name, body, options) {
      checkQueueSend(name);
      // The work carries its trace: the job that handles the message continues it (shared/jobs/worker.ts).
      const trace = traceCarrier();
      const delay = options?.delaySeconds ? { [DELAY_ATTRIBUTE]: String(options.delaySeconds) } : undefined;
      const sendOptions = trace || delay ? { ...options, attributes: { ...options?.attributes, ...trace, ...delay } } : options;
      try {
        return await port.send(name, body, sendOptions);
      } catch (err) {
        // SQS failing after the SDK's own retries is a dependency unavailable, not the caller's mistake
        // nor a bug: 503 with Retry-After (a request retried with its Idempotency-Key finishes the work).
        const e = err as { $fault?: string; $metadata?: { httpStatusCode?: number } };
        if (e?.$fault === 'server' || (e?.$metadata?.httpStatusCode ?? 0) >= 500) {
          const unavailable = new UnavailableError('The platform could not queue its work; retry', { queue: name }, 1);
          Object.defineProperty(unavailable, 'cause', { value: err, enumerable: false });
          throw unavailable;
        }
        throw err;
      }
    },
  };
}

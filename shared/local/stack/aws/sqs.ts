/**
 * SQS for the local AWS endpoint, in the protocol the installed SDK speaks: AWS JSON 1.0
 * (`X-Amz-Target: AmazonSQS.<Op>`) with `x-amzn-query-mode: true`, errors carrying their query
 * code in `x-amzn-query-error` (`AWS.SimpleQueueService.NonExistentQueue;Sender`).
 *
 * It mirrors SendMessage and SendMessageBatch (action sqs:SendMessage), GetQueueUrl and
 * GetQueueAttributes (a plausible subset), on the queue's ARN found by its URL (or name); SQS's
 * limits (body 1..max bytes of allowed characters, DelaySeconds 0..900, batches of 1..10
 * distinct ids within the size limit) with SQS's error codes; MD5OfMessageBody (the SDK checks
 * it) and MD5OfMessageAttributes, computed as SQS does. A refusal is SQS's AccessDenied, whose
 * message names the action in lower case as SQS writes it. Any other operation is refused.
 */
import { createHash } from 'node:crypto';
import { AwsServiceError, deniedMessage, jsonRpcService, type AwsCall } from './protocol';

/** Message attributes as SendMessage carries them. */
export type SqsMessageAttributes = Record<string, { DataType: string; StringValue?: string; BinaryValue?: string }>;

export interface LocalSqsQueue {
  name: string;
  arn: string;
  url: string;
  /** Delivers a message; the endpoint answers with the id and the MD5 it returns. */
  send(body: string, delaySeconds: number, attributes?: SqsMessageAttributes): Promise<{ messageId: string; md5: string }>;
}

interface SqsOptions {
  queues: LocalSqsQueue[];
  sqsMaxMessageBytes?: number;
}

/** A client error in SQS's JSON form: its shape (`namespace#Name`) and, in x-amzn-query-error, its query-protocol code. */
function sqsError(queryCode: string, shape: string, message: string, status = 400): AwsServiceError {
  const [namespace, code] = shape.split('#') as [string, string];
  return new AwsServiceError(code, message, { status, namespace, queryError: [queryCode, 'Sender'] });
}

const invalidParameter = (message: string) => sqsError('InvalidParameterValue', 'com.amazon.coral.service#InvalidParameterValueException', message);
const MAX_DELAY_SECONDS = 900;
const MAX_BATCH_ENTRIES = 10;

interface SendInput {
  MessageBody?: string;
  DelaySeconds?: number;
  MessageAttributes?: SqsMessageAttributes;
}

/** Serves SQS's JSON protocol. */
export function sqsService(options: SqsOptions) {
  const maxBytes = options.sqsMaxMessageBytes ?? 262_144;
  const findQueue = (url: unknown) => {
    const text = String(url ?? '');
    const name = text.split('/').filter(Boolean).pop();
    const queue = options.queues.find((q) => q.url === text) ?? options.queues.find((q) => q.name === name);
    if (!queue) throw sqsError('AWS.SimpleQueueService.NonExistentQueue', 'com.amazonaws.sqs#QueueDoesNotExist', 'The specified queue does not exist.');
    return queue;
  };

  const validate = (entry: SendInput) => {
    const body = entry.MessageBody;
    if (body === undefined || body === null) throw sqsError('MissingParameter', 'com.amazonaws.sqs#MissingParameter', 'The request must contain the parameter MessageBody.');
    const bytes = Buffer.byteLength(body) + attributesSize(entry.MessageAttributes);
    if (bytes < 1 || body.length === 0) throw invalidParameter('One or more parameters are invalid. Reason: Message must be at least one character.');
    if (bytes > maxBytes) throw invalidParameter(`One or more parameters are invalid. Reason: Message must be shorter than ${maxBytes} bytes.`);
    // SQS accepts #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
    if (/[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u.test(body)) {
      throw sqsError('InvalidMessageContents', 'com.amazonaws.sqs#InvalidMessageContents', 'Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF');
    }
    const delay = entry.DelaySeconds ?? 0;
    if (!Number.isInteger(delay) || delay < 0 || delay > MAX_DELAY_SECONDS) {
      throw invalidParameter(`Value ${delay} for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= ${MAX_DELAY_SECONDS}.`);
    }
    return { body, delay };
  };

  const send = async (queue: LocalSqsQueue, entry: SendInput) => {
    const { body, delay } = validate(entry);
    const sent = await queue.send(body, delay, entry.MessageAttributes);
    const attributesMd5 = entry.MessageAttributes && Object.keys(entry.MessageAttributes).length ? md5OfMessageAttributes(entry.MessageAttributes) : undefined;
    return { MessageId: sent.messageId, MD5OfMessageBody: sent.md5, ...(attributesMd5 ? { MD5OfMessageAttributes: attributesMd5 } : {}) };
  };

  const operations: Record<string, (call: AwsCall, input: Record<string, unknown>) => Promise<unknown>> = {
    async SendMessage(call, input) {
      const queue = authorizedQueue(call, input.QueueUrl, 'sqs:SendMessage');
      return send(queue, input as SendInput);
    },
    async SendMessageBatch(call, input) {
      const queue = authorizedQueue(call, input.QueueUrl, 'sqs:SendMessage');
      const entries = (input.Entries ?? []) as Array<SendInput & { Id: string }>;
      if (!entries.length) throw sqsError('AWS.SimpleQueueService.EmptyBatchRequest', 'com.amazonaws.sqs#EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.');
      if (entries.length > MAX_BATCH_ENTRIES) throw sqsError('AWS.SimpleQueueService.TooManyEntriesInBatchRequest', 'com.amazonaws.sqs#TooManyEntriesInBatchRequest', `Maximum number of entries per request are ${MAX_BATCH_ENTRIES}. You have sent ${entries.length}.`);
      if (new Set(entries.map((e) => e.Id)).size !== entries.length) throw sqsError('AWS.SimpleQueueService.BatchEntryIdsNotDistinct', 'com.amazonaws.sqs#BatchEntryIdsNotDistinct', 'Two or more batch entries in the request have the same Id.');
      const total = entries.reduce((sum, e) => sum + Buffer.byteLength(e.MessageBody ?? '') + attributesSize(e.MessageAttributes), 0);
      if (total > maxBytes) throw sqsError('AWS.SimpleQueueService.BatchRequestTooLong', 'com.amazonaws.sqs#BatchRequestTooLong', `Batch requests cannot be longer than ${maxBytes} bytes. You have sent ${total} bytes.`);
      const Successful: unknown[] = [];
      const Failed: unknown[] = [];
      for (const entry of entries) {
        try {
          Successful.push({ Id: entry.Id, ...(await send(queue, entry)) });
        } catch (err) {
          if (!(err instanceof AwsServiceError)) throw err;
          Failed.push({ Id: entry.Id, SenderFault: true, Code: err.options.queryError?.[0] ?? err.code, Message: err.message });
        }
      }
      return { Successful, Failed };
    },
    async GetQueueUrl(call, input) {
      const queue = findQueue(input.QueueName);
      authorize(call, queue, 'sqs:GetQueueUrl');
      return { QueueUrl: queue.url };
    },
    async GetQueueAttributes(call, input) {
      const queue = authorizedQueue(call, input.QueueUrl, 'sqs:GetQueueAttributes');
      const all: Record<string, string> = {
        QueueArn: queue.arn,
        ApproximateNumberOfMessages: '0',
        ApproximateNumberOfMessagesNotVisible: '0',
        ApproximateNumberOfMessagesDelayed: '0',
        DelaySeconds: '0',
        MaximumMessageSize: String(maxBytes),
        MessageRetentionPeriod: '345600',
        ReceiveMessageWaitTimeSeconds: '0',
        VisibilityTimeout: '30',
      };
      const wanted = (input.AttributeNames ?? []) as string[];
      const pick = wanted.includes('All') ? all : Object.fromEntries(Object.entries(all).filter(([name]) => wanted.includes(name)));
      return Object.keys(pick).length ? { Attributes: pick } : {};
    },
  };

  const authorizedQueue = (call: AwsCall, url: unknown, action: string) => {
    const queue = findQueue(url);
    authorize(call, queue, action);
    return queue;
  };

  return jsonRpcService({
    targetPrefix: 'AmazonSQS',
    label: 'SQS',
    contentType: 'application/x-amz-json-1.0',
    operations,
    unknownOperation: { namespace: 'com.amazon.coral.service', queryError: ['UnknownOperationException', 'Sender'] },
  });
}

function authorize(call: AwsCall, queue: LocalSqsQueue, action: string): void {
  const denial = call.authorize(action, queue.arn);
  if (denial) throw sqsError('AccessDenied', 'com.amazon.coral.service#AccessDeniedException', deniedMessage(call.callerArn, denial, { action: action.toLowerCase() }), 403);
}

/** SQS counts attribute names, types and values toward the message size. */
function attributesSize(attributes: SqsMessageAttributes | undefined): number {
  let size = 0;
  for (const [name, value] of Object.entries(attributes ?? {})) {
    size += Buffer.byteLength(name) + Buffer.byteLength(value.DataType) + Buffer.byteLength(value.StringValue ?? '') + Buffer.from(value.BinaryValue ?? '', 'base64').length;
  }
  return size;
}

/** MD5OfMessageAttributes as SQS computes it: length-prefixed name, type, transport byte and value, sorted by name. */
export function md5OfMessageAttributes(attributes: SqsMessageAttributes): string {
  const hash = createHash('md5');
  const field = (bytes: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(bytes.length);
    hash.update(length);
    hash.update(bytes);
  };
  for (const name of Object.keys(attributes).sort()) {
    const value = attributes[name]!;
    field(Buffer.from(name, 'utf8'));
    field(Buffer.from(value.DataType, 'utf8'));
    const binary = value.BinaryValue !== undefined;
    hash.update(Buffer.from([binary ? 2 : 1]));
    field(binary ? Buffer.from(value.BinaryValue!, 'base64') : Buffer.from(value.StringValue ?? '', 'utf8'));
  }
  return hash.digest('hex');
}

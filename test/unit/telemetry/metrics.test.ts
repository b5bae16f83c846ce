import type { SQSRecord } from 'aws-lambda';
import { installLlm, llm, LlmError } from '../../../shared/adapters/llm';
import { queueWaitMs, sqsWorker } from '../../../shared/jobs/worker';
import { DELAY_ATTRIBUTE } from '../../../shared/adapters/queue';
import {
  captureMetrics,
  flushMetrics,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
  recordCallsInProgress,
  recordModelError,
  recordQueueWait,
  recordReplies,
  recordReply,
  recordToolError,
} from '../../../shared/telemetry/metrics';

/** The bounded dimensions a platform metric may carry: never an organization, agent, call or chat id. */
const ALLOWED_DIMENSIONS = new Set(['service', 'Channel', 'Kind', 'ToolType', 'Queue']);

let lines: string[];
let stop: () => void;
const disabledBefore = process.env.POWERTOOLS_METRICS_DISABLED;
beforeEach(() => {
  lines = [];
  stop = captureMetrics((line) => lines.push(line));
});
afterEach(() => {
  stop();
  if (disabledBefore === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED;
  else process.env.POWERTOOLS_METRICS_DISABLED = disabledBefore;
  installLlm(undefined);
});

const docs = () => lines.map((l) => JSON.parse(l) as Record<string, any>);
/** The one line whose dimension `name` has `value`. */
const lineOf = (name: string, value: string) => {
  const found = docs().filter((d) => d[name] === value);
  expect(found).toHaveLength(1);
  return found[0]!;
};

describe('the platform metrics (EMF through Powertools Metrics)', () => {
  it('writes one EMF line per dimension value, in the namespace, with the service and one bounded dimension', () => {
    recordReply('chat', 120.4);
    recordReply('chat', 340);
    recordReply('relay', 90);
    recordModelError('rate_limited');
    recordToolError('webhook');
    recordQueueWait('call-place', 15);
    recordCallsInProgress('web', 3);
    expect(lines).toEqual([]); // nothing leaves before the flush

    flushMetrics();

    expect(lines).toHaveLength(6);
    for (const doc of docs()) {
      const [directive] = doc._aws.CloudWatchMetrics;
      expect(typeof doc._aws.Timestamp).toBe('number');
      expect(directive.Namespace).toBe(METRICS_NAMESPACE);
      expect(directive.Dimensions).toHaveLength(1);
      const [dimensions] = directive.Dimensions as string[][];
      expect(dimensions![0]).toBe('service');
      expect(dimensions).toHaveLength(2);
      for (const name of dimensions!) expect(ALLOWED_DIMENSIONS.has(name)).toBe(true);
      expect(doc.service).toBe(METRICS_SERVICE);
      // Every root member is a dimension, a metric of the directive or the directive itself.
      const metricNames = (directive.Metrics as { Name: string }[]).map((m) => m.Name);
      expect(Object.keys(doc).sort()).toEqual(['_aws', ...dimensions!, ...metricNames].sort());
    }
    const chat = lineOf('Channel', 'chat');
    expect(chat._aws.CloudWatchMetrics[0].Metrics).toEqual([{ Name: 'Replies', Unit: 'Count' }, { Name: 'ReplyLatency', Unit: 'Milliseconds' }]);
    expect(chat.Replies).toEqual([1, 1]);
    expect(chat.ReplyLatency).toEqual([120, 340]);
    expect(lineOf('Channel', 'relay')).toMatchObject({ Replies: 1, ReplyLatency: 90 });
    expect(lineOf('Kind', 'rate_limited')).toMatchObject({ ModelErrors: 1 });
    expect(lineOf('ToolType', 'webhook')).toMatchObject({ ToolErrors: 1 });
    expect(lineOf('Queue', 'call-place')).toMatchObject({ QueueWait: 15 });
    expect(lineOf('Channel', 'web')).toMatchObject({ CallsInProgress: 3 });

    // Flushed lines are not written again.
    flushMetrics();
    expect(lines).toHaveLength(6);
  });

  it('counts a turn\'s timed agent replies only, and never carries the conversation\'s ids', () => {
    recordReplies('widget', [
      { role: 'user', latency_ms: null },
      { role: 'agent', latency_ms: null },
      { role: 'agent', latency_ms: { e2e: 80 } },
      { role: 'tool_call' },
    ]);
    flushMetrics();

    expect(lineOf('Channel', 'widget')).toMatchObject({ Replies: 1, ReplyLatency: 80 });
    expect(lines.join('\n')).not.toMatch(/org|agent_|call_|chat_/i);
  });

  it('writes a line once 100 values wait (where Powertools would print on its own), so every line goes through the sink', () => {
    for (let i = 0; i < 150; i++) recordQueueWait('rag-ingest', i);
    expect(lines).toHaveLength(1);
    flushMetrics();

    const values = docs().flatMap((d) => d.QueueWait as number[]);
    expect(values).toEqual(Array.from({ length: 150 }, (_, i) => i));
  });

  it('off (POWERTOOLS_METRICS_DISABLED, without a sink) stores nothing and writes nothing to stdout', () => {
    stop();
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    const write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      recordReply('chat', 10);
      flushMetrics();
      expect(write).not.toHaveBeenCalled();
      // Turned on again, what was recorded while off is not there.
      stop = captureMetrics((line) => lines.push(line));
      flushMetrics();
      expect(lines).toEqual([]);
    } finally {
      write.mockRestore();
    }
  });

  it('without a sink, on, each line goes to stdout whole', () => {
    stop();
    process.env.POWERTOOLS_METRICS_DISABLED = 'false';
    const written: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => (written.push(String(chunk)), true));
    try {
      recordToolError('builtin');
      flushMetrics();
    } finally {
      write.mockRestore();
    }
    expect(written).toHaveLength(1);
    expect(written[0]!.endsWith('}\n')).toBe(true);
    expect(JSON.parse(written[0]!)).toMatchObject({ ToolType: 'builtin', ToolErrors: 1 });
  });

  it('the model counts its failures by kind, not a request its caller cancelled', async () => {
    const failures = [
      new LlmError('timeout', 'slow', { provider: 'local' }),
      new LlmError('timeout', 'cancelled', { provider: 'local', cancelled: true }),
      new LlmError('provider_error', '500', { provider: 'openai', status: 500 }),
    ];
    installLlm({ name: 'local', complete: async () => Promise.reject(failures.shift()) });
    const request = { model: 'm', temperature: 0, system: '', passages: [], messages: [], tools: [] } as never;

    for (let i = 0; i < 3; i++) await expect(llm().complete(request)).rejects.toBeInstanceOf(LlmError);
    flushMetrics();

    expect(lineOf('Kind', 'timeout')).toMatchObject({ ModelErrors: 1 });
    expect(lineOf('Kind', 'provider_error')).toMatchObject({ ModelErrors: 1 });
    expect(lines).toHaveLength(2);
  });
});

describe('queue waits (sqsWorker)', () => {
  const record = (sentMs: number, delaySeconds?: number, queue = 'webhook-delivery'): SQSRecord => ({
    messageId: `m-${sentMs}`,
    receiptHandle: 'r',
    body: '{}',
    attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(sentMs), SenderId: 't', ApproximateFirstReceiveTimestamp: String(sentMs) },
    messageAttributes: delaySeconds ? { [DELAY_ATTRIBUTE]: { dataType: 'String', stringValue: String(delaySeconds) } } : {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:123456789012:${queue}`,
    awsRegion: 'us-east-1',
  });

  it('is from the send, after the delay its sender asked for, to now; unknown without a SentTimestamp', () => {
    expect(queueWaitMs(record(10_000), 10_750)).toBe(750);
    expect(queueWaitMs(record(10_000, 30), 41_000)).toBe(1_000);
    expect(queueWaitMs(record(10_000, 30), 20_000)).toBe(0);
    expect(queueWaitMs(record(0), 20_000)).toBeNaN();
  });

  it('each message\'s wait is recorded under its queue\'s name and written as the batch ends', async () => {
    const handled: string[] = [];
    const worker = sqsWorker<unknown>(async (_m, r) => {
      handled.push(r.messageId);
      expect(lines).toEqual([]); // not before the batch's end
    });
    const now = Date.now();

    await worker({ Records: [record(now - 2_000), record(now - 5_000, 1, 'call-events')] }, {} as never);

    expect(handled).toHaveLength(2);
    const waits = Object.fromEntries(docs().map((d) => [d.Queue, d.QueueWait]));
    expect(Object.keys(waits).sort()).toEqual(['call-events', 'webhook-delivery']);
    expect(waits['webhook-delivery']).toBeGreaterThanOrEqual(2_000);
    expect(waits['webhook-delivery']).toBeLessThan(4_000);
    expect(waits['call-events']).toBeGreaterThanOrEqual(4_000);
    expect(waits['call-events']).toBeLessThan(6_000);
  });
});

import { flushMetricsEvery, METRICS_NAMESPACE, recordCallsInProgress } from '../shared/telemetry/metrics';

/**
 * The metric the voice service scales on (lib/voice.ts: target tracking and the missing-metric
 * alarm read the same namespace, name and dimension from here).
 */
export const OPEN_CALLS_METRIC = { namespace: METRICS_NAMESPACE, metricName: 'OpenCalls', dimensionsMap: { Service: 'voice-runtime' } } as const;

/** How often each task publishes: the scaling policy's period (one minute). */
export const OPEN_CALLS_INTERVAL_MS = 60_000;

/**
 * One CloudWatch Embedded Metric Format line (the EMF specification, CloudWatch user guide): a
 * JSON object whose `_aws` member holds the timestamp and one metric directive (namespace, one
 * dimension set, the metric), with the dimension's value and the metric's value as root members.
 * CloudWatch Logs extracts the metric from the log event as it arrives (the awslogs driver sends
 * each stdout line as one event; no header or agent needed). Written by hand: these few lines
 * are the whole format, where Powertools Metrics is shaped for Lambda's invocations.
 */
export function openCallsLine(openCalls: number, nowMs: number): string {
  const { namespace, metricName, dimensionsMap } = OPEN_CALLS_METRIC;
  return JSON.stringify({
    _aws: {
      Timestamp: nowMs,
      CloudWatchMetrics: [{ Namespace: namespace, Dimensions: [Object.keys(dimensionsMap)], Metrics: [{ Name: metricName, Unit: 'Count' }] }],
    },
    ...dimensionsMap,
    [metricName]: openCalls,
  });
}

/**
 * Publishes the open calls every interval, and once at once (a new task counts from its start), by
 * writing the EMF line to `write` (stdout in the container). Returns the stop function. The timer
 * does not keep the process alive.
 */
export function publishOpenCalls(count: () => number, options: { write?: (line: string) => void; intervalMs?: number; now?: () => number } = {}): () => void {
  const write = options.write ?? ((line: string) => void process.stdout.write(`${line}\n`));
  const now = options.now ?? Date.now;
  const publish = () => write(openCallsLine(count(), now()));
  publish();
  const timer = setInterval(publish, options.intervalMs ?? OPEN_CALLS_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/**
 * The platform metrics of this process (shared/telemetry/metrics.ts) every interval: the calls it
 * holds open by channel (CallsInProgress, a gauge each task writes once a minute: the dashboard
 * sums the tasks), then every figure stored since the last flush (the calls' replies, model and
 * tool errors). Returns the stop function, which flushes once more.
 */
export function publishCallMetrics(sessions: () => Iterable<{ channel: 'realtime' | 'web' }>, intervalMs = OPEN_CALLS_INTERVAL_MS): () => void {
  return flushMetricsEvery(intervalMs, () => {
    const open = { realtime: 0, web: 0 };
    for (const s of sessions()) open[s.channel]++;
    recordCallsInProgress('realtime', open.realtime);
    recordCallsInProgress('web', open.web);
  });
}

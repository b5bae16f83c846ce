import type { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * The metrics the platform team watches (docs/operations.md, "Metrics"), as CloudWatch Embedded
 * Metric Format lines written by Powertools Metrics: one line per dimension value per flush, the
 * figures of an invocation (or of the voice runtime's minute) together.
 *
 * Every dimension is of bounded cardinality, fixed in this file: the reply's channel, the model
 * failure's kind, the tool's type, the queue's name. Never an organization, agent, call or chat
 * id: each distinct dimension value is a custom metric CloudWatch bills for, and per-organization
 * figures are what analytics (`GET /analytics/conversations`) is for.
 *
 * Where the lines go: stdout (CloudWatch Logs extracts the metrics from the function's or the
 * task's log), unless POWERTOOLS_METRICS_DISABLED says off (the local runtime's default), or a
 * sink is installed (`captureMetrics`: the local runtime's `metrics` option, tests). Recording
 * while off stores nothing. The state lives on `globalThis`, so the local runtime's handlers and
 * the runtime itself share it even where a loader gave them module instances of their own.
 *
 * Powertools Metrics itself (~12 KB bundled) is not loaded at a Lambda's cold start: every
 * function flushes, but only a few record, and those record after a model request or a job's
 * work. A bundle (lib/bundle.ts defines VAP_LAZY_MODULES) imports it as a chunk of its own when a
 * model request starts (`prepareMetrics`, shared/adapters/llm) or the first figure is recorded;
 * figures recorded before it is there wait in the state, and a flush then waits for it. Unbundled
 * (tests, the local runtime, scripts, the voice runtime) it is required with the first figure,
 * so a flush right after a record writes at once.
 */

/** The namespace of the platform's own metrics (the voice runtime's OpenCalls and the throttle counts too). */
export const METRICS_NAMESPACE = 'VoiceAgentPlatform';

/** The `service` dimension Powertools adds to every line: fixed here, so the dashboard can name it whatever a function's POWERTOOLS_SERVICE_NAME says. */
export const METRICS_SERVICE = 'voice-agent-platform';

type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];
// Powertools' MetricUnit values, spelled here so that naming a unit does not load the library.
const COUNT = 'Count' satisfies Unit;
const MILLISECONDS = 'Milliseconds' satisfies Unit;

/** Each metric: its name, unit and its one dimension (besides `service`). The dashboard reads these (lib/monitoring.ts). */
export const PLATFORM_METRICS = {
  /** An agent reply sent towards the user (one with `latency_ms`). */
  replies: { name: 'Replies', unit: COUNT, dimension: 'Channel' },
  /** That reply's `latency_ms.e2e`. */
  replyLatency: { name: 'ReplyLatency', unit: MILLISECONDS, dimension: 'Channel' },
  /** A model request that failed (LlmError), by its kind. */
  modelErrors: { name: 'ModelErrors', unit: COUNT, dimension: 'Kind' },
  /** A tool call of the platform's own whose result is an error the model hears. */
  toolErrors: { name: 'ToolErrors', unit: COUNT, dimension: 'ToolType' },
  /** Calls the voice runtime holds open, each task's count once a minute (sum them over tasks). */
  callsInProgress: { name: 'CallsInProgress', unit: COUNT, dimension: 'Channel' },
  /** From a message's send (after its requested delay) to its handling. */
  queueWait: { name: 'QueueWait', unit: MILLISECONDS, dimension: 'Queue' },
} as const;

/** Where a reply went (the Channel dimension of Replies and ReplyLatency). */
export const REPLY_CHANNELS = ['chat', 'widget', 'openai', 'relay', 'realtime', 'web'] as const;
export type ReplyChannel = (typeof REPLY_CHANNELS)[number];

/** The model failures' kinds (shared/adapters/llm/port.ts `LlmFailureReason`; the adapter's call site fails to compile if one is missing here). */
export const MODEL_ERROR_KINDS = ['timeout', 'unreachable', 'rate_limited', 'provider_error', 'unauthorized', 'rejected', 'malformed', 'not_configured'] as const;
export type ModelErrorKind = (typeof MODEL_ERROR_KINDS)[number];

/** The tools' types (the ToolType dimension): webhook tools and built-ins run here; a `function` tool the caller answers (asked of the platform, it is an error). */
export const TOOL_TYPES = ['webhook', 'builtin', 'function'] as const;
export type ToolType = (typeof TOOL_TYPES)[number];

/** Powertools publishes on its own once a metric holds 100 values; we flush first, so every line goes through `write`. */
const MAX_VALUES = 100;

interface Recorder {
  metrics: Metrics;
  values: number;
}

type Powertools = typeof import('@aws-lambda-powertools/metrics');
type Metric = { name: string; unit: Unit; dimension: string };
type Sink = (line: string) => void;

interface State {
  /** One Powertools Metrics per dimension value (its default dimensions): metrics of one line share their dimensions. */
  recorders: Map<string, Recorder>;
  sink?: Sink;
  /** Powertools Metrics, once loaded. */
  powertools?: Powertools;
  /** Its import, while it is under way (a bundle's chunk). */
  loading?: Promise<void>;
  /** Figures recorded before it was loaded, in order: added to their recorders as it arrives. */
  pending: [Metric, string, number][];
}

const STATE = Symbol.for('vap.platformMetrics');
const state = (): State => ((globalThis as { [STATE]?: State })[STATE] ??= { recorders: new Map(), pending: [] });

/** Powertools Metrics now if it can be had now: loaded already, or required at once where nothing is bundled (see the module comment). */
function powertoolsNow(s: State): Powertools | undefined {
  // A define in bundles (lib/bundle.ts): there esbuild drops the require() as dead code, so the library stays a chunk.
  if (!s.powertools && process.env.VAP_LAZY_MODULES !== 'true') s.powertools = require('@aws-lambda-powertools/metrics') as Powertools;
  return s.powertools;
}

/**
 * Starts loading Powertools Metrics if figures may be recorded and it is not there yet, so that it
 * loads while a model request is under way rather than when the reply is recorded. Cheap to call
 * on every request; resolves once it is loaded (and every waiting figure added).
 */
export function prepareMetrics(): Promise<void> {
  const s = state();
  if ((!metricsEnabled() && !s.pending.length) || powertoolsNow(s)) return Promise.resolve();
  return (s.loading ??= import('@aws-lambda-powertools/metrics').then(
    (loaded) => {
      s.powertools ??= loaded;
      s.loading = undefined;
      for (const [metric, value, figure] of s.pending.splice(0)) add(s.powertools, metric, value, figure);
    },
    (err: unknown) => {
      s.loading = undefined; // tried again by the next figure or flush; the figures wait
      throw err;
    },
  ));
}

const TRUTHY = new Set(['1', 'y', 'yes', 't', 'true', 'on']);

/** Whether metrics are recorded: a sink is installed, or POWERTOOLS_METRICS_DISABLED (read as Powertools reads it) does not turn them off. */
export function metricsEnabled(): boolean {
  return !!state().sink || !TRUTHY.has(process.env.POWERTOOLS_METRICS_DISABLED?.trim().toLowerCase() ?? '');
}

function recorder(powertools: Powertools, dimension: string, value: string): Recorder {
  const recorders = state().recorders;
  const key = `${dimension}=${value}`;
  let r = recorders.get(key);
  if (!r) {
    r = { metrics: new powertools.Metrics({ namespace: METRICS_NAMESPACE, serviceName: METRICS_SERVICE, defaultDimensions: { [dimension]: value } }), values: 0 };
    recorders.set(key, r);
  }
  return r;
}

function record(metric: Metric, value: string, figure: number): void {
  if (!metricsEnabled() || !Number.isFinite(figure)) return;
  const s = state();
  const powertools = powertoolsNow(s);
  if (powertools) return add(powertools, metric, value, figure);
  s.pending.push([metric, value, figure]);
  prepareMetrics().catch(() => undefined); // a failed load is tried again by the flush, which reports it
}

function add(powertools: Powertools, metric: Metric, value: string, figure: number): void {
  const r = recorder(powertools, metric.dimension, value);
  if (r.values >= MAX_VALUES - 1) publish(r, state().sink);
  r.metrics.addMetric(metric.name, metric.unit, figure);
  r.values++;
}

function publish(r: Recorder, sink: Sink | undefined): void {
  if (!r.metrics.hasStoredMetrics()) return;
  const line = JSON.stringify(r.metrics.serializeMetrics());
  r.metrics.clearMetrics();
  r.values = 0;
  if (sink) sink(line);
  else process.stdout.write(`${line}\n`);
}

/** One agent reply sent towards the user, with its `latency_ms.e2e`. */
export function recordReply(channel: ReplyChannel, e2eMs: number): void {
  record(PLATFORM_METRICS.replies, channel, 1);
  record(PLATFORM_METRICS.replyLatency, channel, Math.max(0, Math.round(e2eMs)));
}

/** Every agent reply of a turn that went out with figures (`latency_ms`): the replies of a chat turn, of an OpenAI-compatible request. */
export function recordReplies(channel: ReplyChannel, messages: readonly { role: string; latency_ms?: { e2e: number } | null }[]): void {
  for (const m of messages) if (m.role === 'agent' && m.latency_ms) recordReply(channel, m.latency_ms.e2e);
}

/** A failed model request. */
export function recordModelError(kind: ModelErrorKind): void {
  record(PLATFORM_METRICS.modelErrors, kind, 1);
}

/** A tool call whose result is an error. */
export function recordToolError(toolType: ToolType): void {
  record(PLATFORM_METRICS.toolErrors, toolType, 1);
}

/** How long a message waited in `queue` (its name as SQS knows it) before its handling began. */
export function recordQueueWait(queue: string, waitMs: number): void {
  record(PLATFORM_METRICS.queueWait, queue, Math.max(0, Math.round(waitMs)));
}

/** The calls this process holds open on one channel. */
export function recordCallsInProgress(channel: 'realtime' | 'web', count: number): void {
  record(PLATFORM_METRICS.callsInProgress, channel, count);
}

/**
 * Writes every stored figure: one EMF line per dimension value. Called as an invocation ends (a
 * Lambda is frozen after it: await it), and every interval in the voice runtime. Synchronous when
 * Powertools Metrics is loaded (always, unbundled); in a bundle whose figures came before it, the
 * lines are written once it is, to the destination of the moment of the call.
 */
export async function flushMetrics(): Promise<void> {
  const s = state();
  const sink = s.sink;
  if (s.pending.length && !s.powertools) {
    // Never fails the invocation it ends: the figures wait for the next flush.
    const failed = await prepareMetrics().then(() => undefined, (err: unknown) => err);
    if (failed) process.emitWarning(`Platform metrics: Powertools Metrics did not load (${String(failed)}); ${s.pending.length} figures wait for the next flush`);
  }
  for (const r of s.recorders.values()) publish(r, sink);
}

/**
 * Flushes every `intervalMs`, `before` first (a gauge to record); returns the stop function, which
 * flushes once more. The timer does not keep the process alive.
 */
export function flushMetricsEvery(intervalMs: number, before?: () => void): () => void {
  const tick = () => {
    before?.();
    void flushMetrics();
  };
  const timer = setInterval(tick, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    void flushMetrics();
  };
}

/**
 * Sends the EMF lines to `sink` instead of stdout, recording whatever POWERTOOLS_METRICS_DISABLED
 * says (the local runtime's `metrics` option; tests read the lines). Returns the function that
 * flushes what is left to the sink and removes it.
 */
export function captureMetrics(sink: (line: string) => void): () => void {
  void flushMetrics(); // what was stored before belongs to the previous destination (the one of the call)
  state().sink = sink;
  return () => {
    void flushMetrics();
    if (state().sink === sink) state().sink = undefined;
  };
}

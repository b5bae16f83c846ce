import type * as Api from '@opentelemetry/api';
import type { Attributes, Context, Span } from '@opentelemetry/api';

/**
 * Traces (docs/operations.md, "Traces"). The platform's hooks speak the OpenTelemetry API only,
 * and only once the standard OTEL_* settings turned tracing on: the API and the SDK
 * (shared/telemetry/sdk.ts) are imported then, on the first request or job of the process (a
 * chunk of their own in a function's bundle, never read when off), so tracing off costs a flag
 * read per hook and no byte at cold start (the API alone is 12 KB minified).
 */

/** The API's span kinds (its `SpanKind` enum's values), here so that no hook imports the API at load. */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as const satisfies Record<string, Api.SpanKind>;
/** The API's `SpanStatusCode.ERROR`. */
const STATUS_ERROR = 2 satisfies Api.SpanStatusCode;

let api: typeof Api | undefined;

const TRACER = 'voice-agent-platform';

/** Whether the standard settings ask for traces: an OTLP endpoint or OTEL_TRACES_EXPORTER naming an exporter, and the SDK not disabled. */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED === 'true') return false;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').trim().toLowerCase();
  if (exporter === 'none') return false;
  if (exporter === 'otlp' || exporter === 'console' || exporter === 'xray') return true;
  return !!(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

let starting: Promise<boolean> | undefined;
let active = false;

/** True once the SDK is registered in this process (every hook checks this first). */
export function tracingActive(): boolean {
  return active;
}

/** Registers the SDK once when the settings ask for it; resolves whether tracing is on. Cheap to call on every request. */
export function startTracing(): Promise<boolean> {
  if (active) return Promise.resolve(true);
  if (!tracingConfigured()) return Promise.resolve(false);
  return (starting ??= Promise.all([import('@opentelemetry/api'), import('./sdk')])
    .then(([loaded, sdk]) => {
      sdk.registerTracing();
      api = loaded;
      return (active = true);
    })
    .catch((err: unknown) => {
      starting = undefined;
      // Telemetry never breaks the work it observes.
      console.error(`tracing could not start: ${(err as Error).message}`);
      return false;
    }));
}

/** Takes tracing down in this process (sdk.ts shutdownTracing); the settings are read again at the next start. */
export async function stopTracing(): Promise<void> {
  if (!active) return;
  const { shutdownTracing } = await import('./sdk');
  await shutdownTracing();
  active = false;
  starting = undefined;
  api = undefined;
}

/** Exports the spans ended so far; Lambda freezes the process between invocations, so a function flushes before it answers. */
export async function flushTracing(): Promise<void> {
  if (!active) return;
  const { flushTracing: flush } = await import('./sdk');
  await flush();
}

/** The tracer every hook uses; only once tracing is on (tracingActive()). */
export function tracer(): Api.Tracer {
  if (!api) throw new Error('tracing is not on');
  return api.trace.getTracer(TRACER);
}

/** The loaded API; only once tracing is on. */
export function otel(): typeof Api {
  if (!api) throw new Error('tracing is not on');
  return api;
}

/** The trace id of the active span, or null when tracing is off (what calls, chats and deliveries record as `trace_id`). */
export function currentTraceId(): string | null {
  if (!active || !api) return null;
  const ctx = api.trace.getActiveSpan()?.spanContext();
  return ctx && api.trace.isSpanContextValid(ctx) ? ctx.traceId : null;
}

/** Adds `traceparent` (and `tracestate`) of the active span to outgoing headers; nothing when tracing is off. */
export function withTraceHeaders<H extends Record<string, string>>(headers: H, ctx?: Context): H {
  if (!active || !api) return headers;
  const carrier: Record<string, string> = {};
  api.propagation.inject(ctx ?? api.context.active(), carrier);
  return { ...headers, ...carrier };
}

/** The W3C trace context of the active span as a small carrier (queue messages, schedules); undefined when off. */
export function traceCarrier(): Record<string, string> | undefined {
  if (!active || !api) return undefined;
  const carrier: Record<string, string> = {};
  api.propagation.inject(api.context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** The W3C `traceparent` of the active span (for a URL's query or a stream's parameters, where no header goes); undefined when off. */
export function activeTraceparent(): string | undefined {
  return traceCarrier()?.traceparent;
}

/** A link to the active span (for a span started in another trace: it follows from this one); undefined when off or without one. */
export function linkToActive(): Api.Link[] | undefined {
  if (!active || !api) return undefined;
  const ctx = api.trace.getActiveSpan()?.spanContext();
  return ctx && api.trace.isSpanContextValid(ctx) ? [{ context: ctx }] : undefined;
}

/** A `traceparent` value as the W3C Trace Context defines it (version 00: trace id, parent span id, flags; lower-case hex). */
export const TRACEPARENT_PATTERN = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * `url` with the active span's `traceparent` in its query, when tracing is on: how the trace of
 * a call reaches the carrier's callbacks (Twilio requests each URL as given, query included, and
 * signs it whole), which carry no header of ours. The callback's server span continues it
 * (http.ts). The URL as it is when tracing is off.
 */
export function withTraceQuery(url: string): string {
  const traceparent = activeTraceparent();
  if (!traceparent) return url;
  return `${url}${url.includes('?') ? '&' : '?'}traceparent=${traceparent}`;
}

/** The context a carrier (headers, message attributes) continues; only once tracing is on. */
export function contextFrom(carrier: Record<string, string | undefined> | undefined): Context {
  const root = otel().context.active();
  if (!carrier) return root;
  return otel().propagation.extract(root, carrier, {
    keys: (c) => Object.keys(c),
    get: (c, key) => {
      const found = Object.entries(c).find(([k]) => k.toLowerCase() === key);
      return found?.[1] ?? undefined;
    },
  });
}

export interface SpanOptions {
  kind?: Api.SpanKind;
  attributes?: Attributes;
  /** The parent context (default the active one). */
  parent?: Context;
  /** Whether a thrown error marks the span as failed (default true). */
  recordErrors?: boolean;
  /** Spans of other traces this one follows from (OpenTelemetry span links). */
  links?: Api.Link[];
}

/**
 * Runs `fn` inside a span when tracing is on, and plainly otherwise (no span object, no
 * closure kept). The span ends when `fn` settles; a thrown error is recorded and rethrown.
 */
export async function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span | undefined) => Promise<T> | T): Promise<T> {
  if (!active || !api) return fn(undefined);
  const parent = options.parent ?? api.context.active();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes, ...(options.links ? { links: options.links } : {}) }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      if (options.recordErrors !== false) {
        span.setStatus({ code: STATUS_ERROR, message: (err as Error)?.message });
        span.setAttribute('error.type', (err as Error)?.name ?? 'Error');
      }
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` in a span whose parent is a stored W3C `traceparent` (a call's, kept where its later
 * work finds it: a relay connection's state, a media stream's parameters), so work that arrives
 * with no context of its own joins the call's trace; a root span without one. Plainly when off.
 */
export function inStoredTrace<T>(name: string, traceparent: string | undefined, options: Omit<SpanOptions, 'parent'>, fn: (span: Span | undefined) => Promise<T> | T): Promise<T> {
  if (!active || !api) return inSpan(name, options, fn);
  return inSpan(name, { ...options, parent: storedParent(traceparent) }, fn);
}

/** The context a stored `traceparent` continues; a root context (no active span) without a valid one. Only once tracing is on. */
export function storedParent(traceparent: string | undefined): Context {
  return traceparent && TRACEPARENT_PATTERN.test(traceparent) ? contextFrom({ traceparent }) : otel().trace.deleteSpan(otel().context.active());
}

/** Marks a span failed. */
export function markFailed(span: Span, message?: string): void {
  span.setStatus({ code: STATUS_ERROR, ...(message ? { message } : {}) });
}

export type { Span, Attributes };

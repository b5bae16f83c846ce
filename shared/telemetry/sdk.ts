import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ConsoleSpanExporter, TracerProvider, type ReadableSpan, type Span, type SpanExporter, type SpanProcessor } from '@opentelemetry/sdk-trace';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import type { Context } from '@opentelemetry/api';
import { scrubAttributes } from './scrub';
import { XRayOtlpExporter, xrayRegionOf } from './xray-exporter';

/**
 * The OpenTelemetry SDK, set up once per process when the OTEL_* settings turn tracing on
 * (shared/telemetry/tracing.ts imports this module only then). The exporter is OTLP/HTTP with
 * JSON bodies, reading the standard settings itself (OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT,
 * _HEADERS, _TIMEOUT); OTEL_TRACES_EXPORTER=console prints spans instead. The batch processor
 * reads OTEL_BSP_*. Deployed, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT names X-Ray's OTLP endpoint and
 * the export is signed (xray-exporter.ts). Requests made with fetch (the carrier's, webhook tools',
 * deliveries) get client spans (and a `traceparent`) from the undici instrumentation, which
 * listens on Node's diagnostics channels and so works inside an esbuild bundle; model requests
 * go over node:http (shared/adapters/llm/http-post.ts, which makes its own client span); AWS
 * calls get theirs from shared/telemetry/aws.ts.
 */

let provider: TracerProvider | undefined;

/** Every attribute scrubbed of phone numbers before a span leaves the process. */
class ScrubbingProcessor implements SpanProcessor {
  constructor(private readonly next: SpanProcessor) {}
  onStart(span: Span, parent: Context): void {
    this.next.onStart(span, parent);
  }
  onEnd(span: ReadableSpan): void {
    scrubAttributes(span.attributes as Record<string, unknown>);
    for (const event of span.events) if (event.attributes) scrubAttributes(event.attributes as Record<string, unknown>);
    this.next.onEnd(span);
  }
  forceFlush(): Promise<void> {
    return this.next.forceFlush();
  }
  shutdown(): Promise<void> {
    return this.next.shutdown();
  }
}

function exporter(): SpanExporter {
  const kind = (process.env.OTEL_TRACES_EXPORTER ?? 'otlp').trim().toLowerCase();
  if (kind === 'console') return new ConsoleSpanExporter();
  // X-Ray's OTLP endpoint wants SigV4-signed protobuf; any other endpoint gets the standard exporter.
  const tracesEndpoint = process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  const region = xrayRegionOf(tracesEndpoint);
  if (tracesEndpoint && region) return new XRayOtlpExporter(new URL(tracesEndpoint), region);
  return new OTLPTraceExporter();
}

/** Registers the tracer provider, the W3C propagator, the context manager and the fetch instrumentation. Idempotent. */
export function registerTracing(): void {
  if (provider) return;
  const resource = resourceFromAttributes({ [ATTR_SERVICE_NAME]: process.env.OTEL_SERVICE_NAME || 'voice-agent-platform' }).merge(detectResources({ detectors: [envDetector] }));
  provider = new TracerProvider({ resource, spanProcessors: [new ScrubbingProcessor(new BatchSpanProcessor({ exporter: exporter() }))] });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  undici = new UndiciInstrumentation();
  undici.setTracerProvider(provider);
  undici.enable();
}

let undici: UndiciInstrumentation | undefined;

/**
 * Takes tracing down again (a process that runs on with tracing off: a test file after one that
 * turned it on, in the same jest process): the fetch instrumentation disabled, the spans exported,
 * the globals (provider, propagator, context manager) back to OpenTelemetry's no-ops.
 */
export async function shutdownTracing(): Promise<void> {
  undici?.disable();
  undici = undefined;
  await provider?.shutdown().catch(() => undefined);
  provider = undefined;
  trace.disable();
  propagation.disable();
  context.disable();
}

/** Exports every ended span now. */
export async function flushTracing(): Promise<void> {
  await provider?.forceFlush();
}

/** bench/no-tracing: shared/telemetry/tracing.ts as if tracing had never been written (see register.cjs). */
export const SpanKind = { INTERNAL: 0, SERVER: 1, CLIENT: 2, PRODUCER: 3, CONSUMER: 4 } as const;
export const tracingConfigured = (): boolean => false;
export const tracingActive = (): boolean => false;
export const startTracing = (): Promise<boolean> => Promise.resolve(false);
export const stopTracing = async (): Promise<void> => undefined;
export const flushTracing = async (): Promise<void> => undefined;
export const tracer = (): never => {
  throw new Error('no tracing code in this run');
};
export const otel = tracer;
export const currentTraceId = (): string | null => null;
export const withTraceHeaders = <H>(headers: H): H => headers;
export const traceCarrier = (): undefined => undefined;
export const contextFrom = tracer;
export const inSpan = <T>(_name: string, _options: unknown, fn: (span: undefined) => Promise<T> | T): Promise<T> | T => fn(undefined);
export const markFailed = (): void => undefined;
export const activeTraceparent = (): undefined => undefined;
export const linkToActive = (): undefined => undefined;
export const TRACEPARENT_PATTERN = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
export const withTraceQuery = (url: string): string => url;
export const inStoredTrace = <T>(_name: string, _traceparent: unknown, _options: unknown, fn: (span: undefined) => Promise<T> | T): Promise<T> | T => fn(undefined);
export const storedParent = tracer;

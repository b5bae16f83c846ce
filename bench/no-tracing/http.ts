/** bench/no-tracing: shared/telemetry/http.ts without tracing: the handler itself, no wrapper. */
export const tracedHandler = <H>(_operation: unknown, handler: H): H => handler;

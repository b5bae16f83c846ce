/** bench/no-tracing: shared/telemetry/aws.ts without tracing: no middleware on the clients. */
export const traceAwsClient = (): void => undefined;

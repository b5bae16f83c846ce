/** bench/no-tracing: shared/telemetry/jobs.ts without tracing: the work itself. */
export const inMessageSpan = <T>(_record: unknown, work: () => Promise<T>): Promise<T> => work();
export const afterInvocation = async (): Promise<void> => undefined;
export const scheduledJob = <R>(_name: string, run: R): R => run;

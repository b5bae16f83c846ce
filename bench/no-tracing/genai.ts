/** bench/no-tracing: shared/telemetry/genai.ts without tracing: the model, the tool call and the turn themselves. */
export const captureContent = (): boolean => false;
export const tracedModel = <P>(port: P): P => port;
export const toolSpan = <T>(_call: unknown, _kind: string, run: () => Promise<T>): Promise<T> => run();
export const agentTurnSpan = <T>(_conversation: unknown, _model: string, run: () => Promise<T>): Promise<T> => run();
export const recordRealtimeResponse = (): void => undefined;

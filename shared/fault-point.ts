/**
 * Where the local runtime's fault injection (shared/local/faults.ts, `LOCAL_FAULTS`) reaches an
 * AWS SDK client. Deployed, nothing is installed and a request pays one property read; locally
 * the installed injector may fail a request as the real service can, or change its answer.
 * Added below the SDK's retry middleware, so a throttle or a 5xx it injects is retried by the
 * SDK exactly as AWS's own would be.
 */
import { StandardRetryStrategy } from '@smithy/core/retry';

const INJECTOR = Symbol.for('vap.localFaults');

/** The injector: sends the request with `next` (or not), and may fail it or change what it answers. */
export type FaultInjector = (
  service: 'dynamodb' | 's3',
  commandName: string,
  args: { input: Record<string, any> },
  next: (args: { input: Record<string, any> }) => Promise<{ output: Record<string, any> }>,
) => Promise<{ output: Record<string, any> }>;

type Holder = { [INJECTOR]?: FaultInjector };

/** Installs (or with undefined removes) the process's fault injector. */
export function installFaultInjector(injector: FaultInjector | undefined): void {
  (globalThis as Holder)[INJECTOR] = injector;
}

interface MiddlewareHost {
  middlewareStack: { add: (middleware: any, options: Record<string, unknown>) => void };
}

/** Gives an SDK client its fault point. */
export function addFaultPoint(client: MiddlewareHost, service: 'dynamodb' | 's3'): void {
  client.middlewareStack.add(
    (next: any, context: { commandName?: string }) => (args: { input: Record<string, any> }) => {
      const inject = (globalThis as Holder)[INJECTOR];
      return inject ? inject(service, context.commandName ?? '', args, next) : next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'localFaults', override: true },
  );
}

const BACKOFF_SCALE = Symbol.for('vap.localBackoffScale');

type ScaleHolder = { [BACKOFF_SCALE]?: number };

/** Installs (or with undefined removes) the scale of the SDK's retry waits on the local runtime's clients (LOCAL_FAULTS `backoff=`). */
export function installBackoffScale(scale: number | undefined): void {
  (globalThis as ScaleHolder)[BACKOFF_SCALE] = scale;
}

/** The SDK's cap on one retry wait (@smithy/core's MAXIMUM_RETRY_DELAY). */
const MAXIMUM_RETRY_DELAY_MS = 20_000;

/**
 * The retry strategy of a local runtime's client (DynamoDB Local, the S3 emulator): the SDK's own
 * standard strategy (the same attempts, error types, retry capacity and base delays: in this
 * SDK 1 s for a throttle, 50 ms otherwise) and its own full-jitter exponential wait, random × min(base × 2^retry,
 * 20 s), multiplied by the installed backoff scale (1 unless LOCAL_FAULTS sets `backoff`). A test
 * that injects throttles at realistic rates thus waits a tenth (say) of the wall-clock time, and the
 * SDK still retries each one as AWS's own. Deployed clients keep the SDK's default strategy.
 */
export function localRetryStrategy(maxAttempts: number): StandardRetryStrategy {
  let base = 0;
  return new StandardRetryStrategy({
    maxAttempts,
    backoff: {
      // The strategy sets the base for each retry (throttle or not) right before it computes the wait.
      setDelayBase: (delay: number) => void (base = delay),
      computeNextBackoffDelay: (retries: number) => {
        const scale = (globalThis as ScaleHolder)[BACKOFF_SCALE] ?? 1;
        return Math.floor(Math.random() * Math.min(base * 2 ** retries, MAXIMUM_RETRY_DELAY_MS) * scale);
      },
    },
  });
}

const MODEL_INJECTOR = Symbol.for('vap.localModelFaults');

/** The model's fault injector: an error to throw instead of asking the model, or undefined to ask it. */
export type ModelFaultInjector = (provider: string) => Error | undefined;

type ModelHolder = { [MODEL_INJECTOR]?: ModelFaultInjector };

/** Installs (or with undefined removes) the process's model fault injector. */
export function installModelFaultInjector(injector: ModelFaultInjector | undefined): void {
  (globalThis as ModelHolder)[MODEL_INJECTOR] = injector;
}

/** The error the installed injector draws for this model request, if any (deployed: never). */
export function modelFault(provider: string): Error | undefined {
  return (globalThis as ModelHolder)[MODEL_INJECTOR]?.(provider);
}

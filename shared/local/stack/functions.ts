import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { createInterface } from 'node:readline';
import { ExtensionsApi } from './extensions-api';

/**
 * Lambda, locally, for the synthesized stack: each function of the template runs in execution
 * environments of its own (worker threads), each with exactly the environment Lambda would give
 * it: the template's `Environment`, Lambda's reserved variables, and credentials that name the
 * function's role (the local AWS endpoint evaluates that role's policies on every call). As Lambda:
 * - an environment imports the bundle once (init) and then runs one invocation at a time; a
 *   concurrent invocation gets another environment, up to the function's reserved concurrency
 *   (beyond it: TooManyRequestsException) or the local cap;
 * - an invocation past the function's `Timeout` is stopped and its environment discarded
 *   ("Task timed out after N.00 seconds"); past `MemorySize` (the V8 heap) the environment dies;
 * - an environment whose init failed, or that crashed, is discarded and the next invocation
 *   starts a new one; idle environments are reclaimed after a while;
 * - each environment serves the Extensions API at its AWS_LAMBDA_RUNTIME_API (extensions-api.ts):
 *   an extension registered during init gets each invocation's INVOKE event, and the environment
 *   takes its next invocation only once every extension has asked for its next event (the
 *   caller has its answer before that), within the function's timeout.
 */

export interface FunctionSpec {
  /** The physical function name (Ref). */
  name: string;
  logicalId: string;
  arn: string;
  /** The asset directory holding the bundle (cdk.out/asset.…). */
  codeDir: string;
  /** `Handler`, e.g. index.handler. */
  handler: string;
  /** The template's Environment.Variables, resolved. */
  environment: Record<string, string>;
  memoryMb: number;
  timeoutSeconds: number;
  reservedConcurrency?: number;
  /** Credentials of the function's role (the local endpoint maps the key id to the role). */
  credentials: { accessKeyId: string; secretAccessKey: string; sessionToken: string };
  logGroupName: string;
}

export interface StreamSink {
  prelude(prelude: { statusCode?: number; headers?: Record<string, string>; cookies?: string[] }): void;
  chunk(data: string): void;
  /** The stream ended: the response is complete, though the invocation may go on until the handler returns. */
  end?(): void;
}

/** An invocation that failed in the function (its error), as Lambda reports it to the caller. */
export class FunctionError extends Error {
  constructor(readonly functionName: string, readonly errorType: string, errorMessage: string, readonly trace: string[] = []) {
    super(errorMessage);
    this.name = errorType;
  }
}

/** Lambda's own refusal to run an invocation (throttled, bad payload), not the function's error. */
export class LambdaServiceError extends Error {
  constructor(name: string, message: string, readonly statusCode: number) {
    super(message);
    this.name = name;
  }
}

interface Environment {
  /** Started once the environment's Runtime API listens (its address is in the worker's environment). */
  worker?: Worker;
  extensions: ExtensionsApi;
  ready: Promise<void>;
  busy: boolean;
  lastUsed: number;
  dead: boolean;
  current?: { id: string; deadline: number; resolve(value: unknown): void; reject(err: Error): void; sink?: StreamSink; timer: NodeJS.Timeout };
}

export interface LambdaServiceOptions {
  /** Where the functions' log lines go (each prefixed with the function's logical id). Default: stderr. */
  log?: (line: string, fn: FunctionSpec) => void;
  /** Variables every environment gets on top (AWS_ENDPOINT_URL: the local endpoint; stand-ins' addresses). */
  extraEnvironment?: Record<string, string>;
  region: string;
  /** Most environments of one function at once when it reserves no concurrency (default 10). */
  maxEnvironments?: number;
  /** An environment idle this long is reclaimed (default 5 minutes). */
  idleMs?: number;
}

const WORKER_FILE = join(__dirname, 'lambda-worker.mjs');
/** Lambda's synchronous invocation payload limit (request and response). */
const PAYLOAD_LIMIT = 6 * 1024 * 1024;
/** Lambda's init phase limit. */
const INIT_TIMEOUT_MS = 10_000;

export class LambdaService {
  private readonly specs = new Map<string, FunctionSpec>();
  private readonly envs = new Map<string, Environment[]>();
  private readonly reaper: NodeJS.Timeout;
  private stopped = false;
  /** Invocations by function name, and cold starts. */
  readonly stats = new Map<string, { invocations: number; coldStarts: number; errors: number; timeouts: number }>();

  constructor(specs: FunctionSpec[], private readonly options: LambdaServiceOptions) {
    for (const spec of specs) this.specs.set(spec.name, spec);
    const idleMs = options.idleMs ?? 5 * 60_000;
    this.reaper = setInterval(() => {
      const now = Date.now();
      for (const list of this.envs.values()) for (const env of list) if (!env.busy && now - env.lastUsed > idleMs) this.discard(env);
    }, Math.min(idleMs, 30_000));
    this.reaper.unref();
  }

  functions(): FunctionSpec[] {
    return [...this.specs.values()];
  }

  spec(nameOrArn: string): FunctionSpec | undefined {
    return this.specs.get(nameOrArn) ?? [...this.specs.values()].find((s) => s.arn === nameOrArn || s.logicalId === nameOrArn);
  }

  private stat(name: string) {
    let s = this.stats.get(name);
    if (!s) this.stats.set(name, (s = { invocations: 0, coldStarts: 0, errors: 0, timeouts: 0 }));
    return s;
  }

  private start(spec: FunctionSpec): Environment {
    const extensions = new ExtensionsApi({ name: spec.name, handler: spec.handler });
    const entry: Environment = { extensions, busy: false, lastUsed: Date.now(), dead: false, ready: undefined as unknown as Promise<void> };
    entry.ready = (async () => {
      const runtimeApi = await extensions.listen();
      if (entry.dead) throw new FunctionError(spec.name, 'Runtime.ExitError', 'The environment was stopped during init');
      const worker = (entry.worker = this.spawn(spec, entry, runtimeApi));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new FunctionError(spec.name, 'Runtime.InitTimeout', `Init phase exceeded ${INIT_TIMEOUT_MS / 1000} s`)), INIT_TIMEOUT_MS);
        worker.once('message', (message: { type: string; error?: { errorType: string; errorMessage: string; trace?: string[] } }) => {
          if (message.type === 'ready') {
            // The runtime asks for its first invocation: init ends once every extension has asked too.
            extensions.endInit();
            extensions.allWaiting(INIT_TIMEOUT_MS, 'Init').then(
              () => (clearTimeout(timer), extensions.failure ? reject(new FunctionError(spec.name, extensions.failure.errorType, extensions.failure.errorMessage)) : resolve()),
              (err: Error) => (clearTimeout(timer), reject(new FunctionError(spec.name, 'Extension.InitTimeout', err.message))),
            );
          } else {
            clearTimeout(timer);
            reject(new FunctionError(spec.name, message.error?.errorType ?? 'Runtime.Unknown', message.error?.errorMessage ?? 'init failed', message.error?.trace));
          }
        });
        worker.once('exit', (code) => {
          clearTimeout(timer);
          reject(new FunctionError(spec.name, 'Runtime.ExitError', `RequestId: init Error: Runtime exited with error: exit status ${code}`));
        });
      });
    })();
    entry.ready.catch(() => this.discard(entry));
    const list = this.envs.get(spec.name) ?? [];
    list.push(entry);
    this.envs.set(spec.name, list);
    this.stat(spec.name).coldStarts++;
    return entry;
  }

  /** The environment's worker thread (its runtime process), with Lambda's variables and the function's. */
  private spawn(spec: FunctionSpec, entry: Environment, runtimeApi: string): Worker {
    const env: Record<string, string> = {
      // Lambda's reserved variables (the template cannot set these: CloudFormation refuses them).
      AWS_REGION: this.options.region,
      AWS_DEFAULT_REGION: this.options.region,
      AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
      AWS_LAMBDA_FUNCTION_NAME: spec.name,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(spec.memoryMb),
      AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
      AWS_LAMBDA_LOG_GROUP_NAME: spec.logGroupName,
      AWS_LAMBDA_RUNTIME_API: runtimeApi,
      LAMBDA_TASK_ROOT: spec.codeDir,
      _HANDLER: spec.handler,
      TZ: ':UTC',
      LANG: 'en_US.UTF-8',
      PATH: '/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin',
      NODE_PATH: '/opt/nodejs/node_modules',
      AWS_ACCESS_KEY_ID: spec.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: spec.credentials.secretAccessKey,
      AWS_SESSION_TOKEN: spec.credentials.sessionToken,
      ...this.options.extraEnvironment,
      ...spec.environment,
    };
    const worker = new Worker(WORKER_FILE, {
      env,
      workerData: { codeDir: spec.codeDir, handler: spec.handler, functionName: spec.name, functionArn: spec.arn, memoryMb: spec.memoryMb, logGroupName: spec.logGroupName },
      resourceLimits: { maxOldGenerationSizeMb: Math.max(64, spec.memoryMb) },
      stdout: true,
      stderr: true,
      // NODE_OPTIONS in the template (--enable-source-maps) applies to the environment as in Lambda.
      execArgv: /--enable-source-maps/.test(spec.environment.NODE_OPTIONS ?? '') ? ['--enable-source-maps'] : [],
    });
    for (const stream of [worker.stdout, worker.stderr]) createInterface({ input: stream }).on('line', (line) => this.log(line, spec));
    worker.on('message', (message: { type: string; id?: string; result?: unknown; error?: { errorType: string; errorMessage: string; trace?: string[] }; prelude?: never; data?: string }) => {
      const current = entry.current;
      if (!current || message.id !== current.id) return;
      if (message.type === 'prelude') current.sink?.prelude(message.prelude ?? {});
      else if (message.type === 'chunk') current.sink?.chunk(message.data ?? '');
      else if (message.type === 'end') current.sink?.end?.();
      else if (message.type === 'result' || message.type === 'error') {
        clearTimeout(current.timer);
        entry.current = undefined;
        if (message.type === 'result') current.resolve(message.result);
        else current.reject(new FunctionError(spec.name, message.error!.errorType, message.error!.errorMessage, message.error!.trace));
        this.release(spec, entry, current);
      }
    });
    const crashed = (why: string) => {
      const current = entry.current;
      entry.current = undefined;
      this.discard(entry);
      if (current) {
        clearTimeout(current.timer);
        current.reject(new FunctionError(spec.name, 'Runtime.ExitError', `RequestId: ${current.id} Error: Runtime exited ${why}`));
      }
    };
    worker.on('error', (err) => crashed(`with error: ${err.message}`));
    worker.on('exit', (code) => crashed(`with error: exit status ${code}`));
    return worker;
  }

  /**
   * After the runtime's answer: the environment is free once every extension has asked for its
   * next event; one that has not by the invocation's deadline resets it (Lambda counts the
   * extensions' time in the invocation's duration and timeout).
   */
  private release(spec: FunctionSpec, entry: Environment, invocation: { id: string; deadline: number }): void {
    const free = () => {
      if (entry.dead) return;
      if (entry.extensions.failure) return this.discard(entry);
      entry.busy = false;
      entry.lastUsed = Date.now();
    };
    if (entry.extensions.count === 0) return free();
    entry.extensions.allWaiting(Math.max(0, invocation.deadline - Date.now()), 'Invoke').then(free, (err: Error) => {
      this.stat(spec.name).timeouts++;
      this.log(`${new Date().toISOString()} ${invocation.id} Task timed out after ${spec.timeoutSeconds.toFixed(2)} seconds (${err.message})`, spec);
      this.discard(entry);
    });
  }

  private log(line: string, spec: FunctionSpec): void {
    if (this.options.log) this.options.log(line, spec);
    else process.stderr.write(`[${spec.logicalId}] ${line}\n`);
  }

  private discard(env: Environment): void {
    if (env.dead) return;
    env.dead = true;
    for (const [name, list] of this.envs) {
      const i = list.indexOf(env);
      if (i >= 0) list.splice(i, 1);
      if (!list.length) this.envs.delete(name);
    }
    void env.worker?.terminate();
    void env.extensions.close();
  }

  /** Starts one environment and waits for its init (a bundle that does not load fails here). */
  async warm(name: string): Promise<void> {
    const spec = this.spec(name);
    if (!spec) throw new LambdaServiceError('ResourceNotFoundException', `Function not found: ${name}`, 404);
    const existing = this.envs.get(spec.name)?.find((e) => !e.dead);
    await (existing ?? this.start(spec)).ready;
  }

  /**
   * Invokes a function synchronously (RequestResponse), or with response streaming when `sink` is
   * given; resolves with its result, rejects with FunctionError (the function's error or timeout)
   * or LambdaServiceError (Lambda refused the invocation).
   */
  async invoke(nameOrArn: string, event: unknown, sink?: StreamSink): Promise<unknown> {
    if (this.stopped) throw new LambdaServiceError('ServiceException', 'The local Lambda service is stopped', 500);
    const spec = this.spec(nameOrArn);
    if (!spec) throw new LambdaServiceError('ResourceNotFoundException', `Function not found: ${nameOrArn}`, 404);
    const payload = JSON.stringify(event ?? null);
    if (Buffer.byteLength(payload) > PAYLOAD_LIMIT) throw new LambdaServiceError('RequestTooLargeException', `Request must be smaller than ${PAYLOAD_LIMIT} bytes for the InvokeFunction operation`, 413);
    const stat = this.stat(spec.name);
    stat.invocations++;
    const list = this.envs.get(spec.name) ?? [];
    let env = list.find((e) => !e.busy && !e.dead);
    if (!env) {
      const cap = spec.reservedConcurrency ?? this.options.maxEnvironments ?? 10;
      if (spec.reservedConcurrency === 0 || list.length >= cap) {
        if (spec.reservedConcurrency !== undefined) throw new LambdaServiceError('TooManyRequestsException', 'Rate Exceeded.', 429);
        // Past the local cap (not a Lambda limit): wait for an environment rather than start another.
        await new Promise((r) => setTimeout(r, 20));
        return this.invoke(nameOrArn, event, sink);
      }
      env = this.start(spec);
    }
    env.busy = true;
    try {
      await env.ready;
    } catch (err) {
      env.busy = false;
      stat.errors++;
      throw err;
    }
    const requestId = randomUUID();
    const timeoutMs = spec.timeoutSeconds * 1000;
    const chosen = env;
    try {
      const result = await new Promise<unknown>((resolve, reject) => {
        const timer = setTimeout(() => {
          stat.timeouts++;
          chosen.current = undefined;
          this.discard(chosen);
          reject(new FunctionError(spec.name, 'Sandbox.Timedout', `${new Date().toISOString()} ${requestId} Task timed out after ${spec.timeoutSeconds.toFixed(2)} seconds`));
        }, timeoutMs);
        const deadline = Date.now() + timeoutMs;
        chosen.current = { id: requestId, deadline, resolve, reject, sink, timer };
        chosen.extensions.invoke({ requestId, deadlineMs: deadline, invokedFunctionArn: spec.arn });
        chosen.worker!.postMessage({ type: 'invoke', id: requestId, event: JSON.parse(payload), requestId, deadline });
      });
      if (!sink && Buffer.byteLength(JSON.stringify(result ?? null)) > PAYLOAD_LIMIT) {
        throw new FunctionError(spec.name, 'Function.ResponseSizeTooLarge', `Response payload size exceeded maximum allowed payload size (${PAYLOAD_LIMIT} bytes).`);
      }
      return result;
    } catch (err) {
      stat.errors++;
      throw err;
    }
  }

  /** Every environment stopped. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.reaper);
    const all = [...this.envs.values()].flat();
    for (const env of all) env.dead = true;
    this.envs.clear();
    await Promise.all(all.map((env) => Promise.all([env.worker?.terminate(), env.extensions.close()])));
  }
}

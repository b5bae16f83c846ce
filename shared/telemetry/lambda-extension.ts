import { request } from 'node:http';
import { flushTracing, tracingConfigured } from './tracing';
import { answersFirst, runAfterAnswer } from '../after-answer';

/**
 * Spans leave a deployed function after its answer, not before (docs/operations.md, "Traces").
 *
 * Lambda freezes an execution environment once its invocation is over, so a traced function must
 * export its spans before then. Flushing before answering costs every traced request the export's
 * round trip (+4.6 ms for a chat turn, docs/benchmarks.md). The Extensions API gives the same
 * guarantee without that wait: an extension registered for INVOKE events gets each invocation's
 * event, and Lambda ends the invocation (freezes the environment, or gives it the next request)
 * only once the runtime AND every extension have asked for their next event. So an internal
 * extension (one running in the function's own process) that asks for its next event only after
 * the handler settled and the spans were exported lets the answer go first and the export follow.
 *
 * The same wait carries the function's own work after its answer (shared/after-answer.ts):
 * each invocation's context is marked as one that answers first, and its queued work runs here,
 * before the export and before the next event is asked for.
 *
 * The function's bundle entry (lib/bundle.ts) awaits `lambdaHandlers()` at module load: the
 * registration must happen during init, before the runtime first asks for an invocation (Lambda
 * refuses it after), and only a top-level await in the entry holds init until it is done. Where
 * tracing is off, or no Runtime API is there (the local runtime running the sources, tests), it
 * does nothing and the handlers are the functions' own.
 */

const API_VERSION = '2020-01-01';
/** The extension's name (Lambda-Extension-Name); internal extensions name themselves. */
export const EXTENSION_NAME = 'vap-trace-export';
/** An export may not run into the function's timeout: it stops this long before the deadline Lambda gives. */
const DEADLINE_MARGIN_MS = 200;

let registered = false;
/** Invocations whose handler has settled, against the INVOKE events taken (one environment runs one invocation at a time). */
let settled = 0;
let taken = 0;
let wake: (() => void) | undefined;

/**
 * Whether a hook must export its spans before it answers: in Lambda (the environment is frozen
 * after the answer) when no extension exports them after it.
 */
export function flushBeforeAnswer(): boolean {
  return !!process.env.AWS_EXECUTION_ENV && !registered;
}

type Handler = ((...args: any[]) => unknown) & Record<PropertyKey, unknown>;

/**
 * Registers the extension when this is a Lambda environment with tracing on, and gives back a
 * wrapper that marks each invocation settled when the handler's promise does (its response is
 * then on its way: the runtime posts it as soon as the promise resolves). Without the extension
 * the wrapper gives each handler back untouched.
 */
export async function lambdaHandlers(env: NodeJS.ProcessEnv = process.env): Promise<<H>(handler: H) => H> {
  const api = env.AWS_LAMBDA_RUNTIME_API;
  if (!api || !env.AWS_EXECUTION_ENV || !tracingConfigured(env)) return (handler) => handler;
  let id: string;
  try {
    id = await register(api);
  } catch (err) {
    // Spans are then flushed before each answer, as without the extension.
    console.error(`trace export extension not registered: ${(err as Error).message}`);
    return (handler) => handler;
  }
  registered = true;
  void loop(api, id);
  return <H>(handler: H) => (typeof handler === 'function' ? (wrap(handler as unknown as Handler) as H) : handler);
}

/** The contexts of settled invocations whose work after the answer has not run yet (after-answer.ts). */
const answered: object[] = [];

/** The invocation's context among a handler's arguments (`(event, context)`; streamed: `(event, stream, context)`). */
const contextIn = (args: unknown[]) => args.find((a, i) => i > 0 && typeof a === 'object' && a !== null && 'awsRequestId' in a) as object | undefined;

function wrap(handler: Handler): Handler {
  const wrapped = async function (this: unknown, ...args: unknown[]) {
    // The extension asks for its next event only after this invocation's work after the answer.
    const context = contextIn(args);
    if (context) answersFirst(context);
    try {
      return await handler.apply(this, args);
    } finally {
      if (context) answered.push(context);
      settled++;
      wake?.();
    }
  };
  // Keep the runtime's marks (response streaming's symbol) and Middy's members.
  for (const key of Reflect.ownKeys(handler)) if (!(key in wrapped)) (wrapped as unknown as Record<PropertyKey, unknown>)[key] = handler[key];
  return wrapped as unknown as Handler;
}

/** One invocation at a time: take its event, wait for the handler to settle, export, then ask for the next. */
async function loop(api: string, id: string): Promise<void> {
  for (;;) {
    let event: { eventType?: string; deadlineMs?: number };
    try {
      event = await call(api, 'GET', `/${API_VERSION}/extension/event/next`, { 'Lambda-Extension-Identifier': id });
    } catch (err) {
      // The Runtime API is gone (the environment is shutting down): nothing more to do.
      console.error(`trace export extension stopped: ${(err as Error).message}`);
      registered = false;
      return;
    }
    if (event.eventType !== 'INVOKE') continue;
    taken++;
    while (settled < taken) await new Promise<void>((resolve) => (wake = resolve));
    wake = undefined;
    // Let the runtime send the answer before the export's writes.
    await new Promise((resolve) => setImmediate(resolve));
    const deadlineMs = (event.deadlineMs ?? Date.now() + 10_000) - DEADLINE_MARGIN_MS;
    // The function's work after its answer (a chat turn's final figures), then its spans (which include that work's).
    const contexts = answered.splice(0);
    for (const context of contexts) {
      const left = deadlineMs - Date.now();
      if (left > 0) await within(runAfterAnswer(context), left).catch((err: unknown) => console.error(`work after the answer: ${(err as Error).message}`));
    }
    const budget = deadlineMs - Date.now();
    if (budget > 0) await within(flushTracing(), budget).catch((err: unknown) => console.error(`trace export failed: ${(err as Error).message}`));
  }
}

function within(work: Promise<void>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((_, reject) => (timer = setTimeout(() => reject(new Error(`not done within ${ms} ms of the invocation's deadline`)), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

async function register(api: string): Promise<string> {
  let id: string | undefined;
  await call(api, 'POST', `/${API_VERSION}/extension/register`, { 'Lambda-Extension-Name': EXTENSION_NAME }, { events: ['INVOKE'] }, (headers) => {
    id = headers['lambda-extension-identifier'] as string | undefined;
  });
  if (!id) throw new Error('no Lambda-Extension-Identifier in the answer');
  return id;
}

/** One Runtime API request (plain HTTP on the environment's loopback); rejects on any status but 200. */
function call(api: string, method: string, path: string, headers: Record<string, string>, body?: unknown, onHeaders?: (h: Record<string, string | string[] | undefined>) => void): Promise<any> {
  const [host, port] = api.split(':');
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request({ host, port: Number(port || 80), method, path, headers: { ...headers, ...(payload ? { 'content-type': 'application/json' } : {}) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        if (res.statusCode !== 200) return reject(new Error(`${method} ${path}: ${res.statusCode} ${text}`));
        onHeaders?.(res.headers);
        try {
          resolve(text ? JSON.parse(text) : {});
        } catch {
          reject(new Error(`${method} ${path}: not JSON`));
        }
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(payload);
  });
}

/**
 * Work an invocation does once its answer has been handed back (docs/api.md, "Latency of every
 * reply": a chat turn answered whole stores its replies' final figures, whose `e2e` ends with that
 * answer, so they can only be written after it).
 *
 * Only an invocation that can go on after answering offers it, each marking its context:
 * - the local runtime's server, once it has written the response (shared/local/http-server.ts);
 * - the streaming REST API's `streamHandler`, once its stream has ended: the client then has the
 *   whole response and the handler may still work before it returns (shared/http/streaming.ts);
 * - a deployed buffered function whose internal extension is registered (tracing on): Lambda keeps
 *   the environment until the extension asks for its next event, which it does after this work
 *   (shared/telemetry/lambda-extension.ts).
 * Anywhere else (the HTTP API with tracing off, a direct invoke) the environment may be frozen the
 * moment the handler returns, so nothing is offered and a caller must do without (`afterAnswerOf`
 * gives undefined).
 */

export type AnswerTask = () => Promise<unknown> | unknown;

const TASKS = Symbol.for('voice-agent-platform.after-answer');

type Marked = Record<symbol, AnswerTask[] | undefined>;

/** Marks `context` as an invocation that runs work after its answer (see the module comment). */
export function answersFirst<T extends object>(context: T): T {
  (context as Marked)[TASKS] ??= [];
  return context;
}

/** How to queue work after the invocation's answer, or undefined when the invocation cannot. */
export function afterAnswerOf(context: unknown): ((task: AnswerTask) => void) | undefined {
  if (typeof context !== 'object' || context === null) return undefined;
  const tasks = (context as Marked)[TASKS];
  return tasks ? (task) => void tasks.push(task) : undefined;
}

/**
 * Runs the work queued on `context` (and any it queues meanwhile), each task after the one before;
 * a failed task is logged and the next still runs. The answer has left: nobody else would hear of it.
 */
export async function runAfterAnswer(context: unknown): Promise<void> {
  if (typeof context !== 'object' || context === null) return;
  const tasks = (context as Marked)[TASKS];
  while (tasks?.length) {
    const task = tasks.shift()!;
    try {
      await task();
    } catch (err) {
      // Loaded here only: the bundle entry imports this module, and a function need not load the logger at start for it.
      const { logger } = await import('./logger');
      logger.error('Work after the answer failed', { error: err as Error });
    }
  }
}

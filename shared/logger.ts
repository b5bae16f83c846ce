import type { Logger } from '@aws-lambda-powertools/logger';

/**
 * The process logger: structured JSON through Powertools. Request bodies, headers and secrets are
 * never passed to it; middleware logs only method, route, status and timing.
 *
 * Powertools Logger (about 21 KB bundled, with the parts of Powertools' commons it uses) loads
 * beside a Lambda's start, not in it, as Powertools Metrics does (telemetry/metrics.ts). In a
 * bundle (lib/bundle.ts defines VAP_LAZY_MODULES) this module starts importing it, a chunk of its
 * own, when it loads, and the function's init goes on without waiting: the chunk loads while the
 * runtime fetches the first event and the first request waits on its first read, so from then on a
 * line is written at once. A line logged before that (a request answered without any I/O, a
 * warning at init) waits here, in order, and is written as the logger arrives; every handler
 * awaits `logsWritten()` before it answers (shared/http/handler.ts and streaming.ts,
 * http/websocket.ts, jobs/worker.ts, telemetry/jobs.ts), so no line is left for after its
 * invocation, when Lambda may freeze the environment. Powertools stamps a line when it writes it,
 * so a waiting line's `timestamp` is up to that load late. Unbundled (tests, the local runtime,
 * scripts, the voice runtime) the logger is required at once.
 */
type Level = 'info' | 'warn' | 'error';
/** What Powertools takes: a message, then an error or objects of attributes. */
type Line = [message: string, ...extra: (Error | string | Record<string, unknown>)[]];
type Write = (...line: Line) => void;

let powertools: Logger | undefined;
let loading: Promise<void> | undefined;
const waiting: [Level, Line][] = [];
let level: Parameters<Logger['setLogLevel']>[0] | undefined;
/** Set when the chunk failed to load: lines then go to the console as they come. */
let failed = false;

function load(): Promise<void> {
  return (loading ??= import('./powertools-logger').then(
    (loaded) => {
      powertools = loaded.powertoolsLogger;
      if (level) powertools.setLogLevel(level);
      for (const [at, line] of waiting.splice(0)) (powertools[at] as Write)(...line);
    },
    (err: unknown) => {
      // A bundle without its chunk is broken anyway; its lines still reach the log.
      failed = true;
      for (const [at, [message, ...extra]] of waiting.splice(0)) console[at](message, ...extra);
      console.error('Powertools Logger did not load', err);
    },
  ));
}

// A define in bundles (lib/bundle.ts): there esbuild drops the require() as dead code, so the library stays a chunk.
if (process.env.VAP_LAZY_MODULES !== 'true') powertools = (require('./powertools-logger') as typeof import('./powertools-logger')).powertoolsLogger;
else void load();

const line = (at: Level): Write => (...args) => {
  if (powertools) (powertools[at] as Write)(...args);
  else if (failed) console[at](...args);
  else waiting.push([at, args]);
};

export const logger = {
  info: line('info'),
  warn: line('warn'),
  error: line('error'),
  /** Powertools' level (tests silence the log with 'SILENT'); lines waiting for the logger get it too. */
  setLogLevel(to: NonNullable<typeof level>): void {
    level = to;
    powertools?.setLogLevel(to);
  },
};

/** Resolves once every line logged so far is written (at once unless the logger is still loading). */
export function logsWritten(): Promise<void> {
  return powertools || !loading ? Promise.resolve() : loading;
}

/**
 * `node --require ./bench/no-tracing/register.cjs`: the platform WITHOUT its tracing code, for
 * bench/tracing-cost.ts's "none" runs. Node's resolver is wrapped so that the telemetry hook
 * modules the platform imports (shared/telemetry/{tracing,http,jobs,aws,genai}.ts) resolve to the
 * stubs beside this file: each export is the bare pass-through the code would be had tracing never
 * been written (the handler itself, the work itself, no client middleware, no flag read). The
 * platform is CommonJS under tsx, so this is a require-resolution hook (module.register() hooks see
 * only ESM imports on Node 20). bench/tracing-cost.ts checks before every run that each stub
 * exports every name its real module does.
 */
const Module = require('node:module');
const path = require('node:path');

const STUBBED = ['tracing', 'http', 'jobs', 'aws', 'genai'];
const telemetry = path.resolve(__dirname, '..', '..', 'shared', 'telemetry');
const stubs = new Map(STUBBED.map((name) => [path.join(telemetry, `${name}.ts`), path.join(__dirname, `${name}.ts`)]));
const resolve = Module._resolveFilename;
let redirected = 0;
Module._resolveFilename = function resolveWithoutTracing(request, parent, ...rest) {
  const resolved = resolve.call(this, request, parent, ...rest);
  const stub = stubs.get(resolved);
  if (stub && !(parent && parent.filename && parent.filename.startsWith(__dirname))) {
    redirected++;
    return stub;
  }
  return resolved;
};
/** How many imports were sent to a stub (the bench asserts some were). */
globalThis.__noTracingRedirects = () => redirected;

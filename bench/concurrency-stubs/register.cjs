/**
 * `node --require ./bench/concurrency-stubs/register.cjs` with BENCH_CONCURRENCY_STUBS naming
 * which platform modules bench/concurrency.ts swaps for the stubs beside this file:
 *
 * - `slots`: shared/domain/concurrency/slots.ts → admission-slots.ts, the real module whose
 *   admission writes the bench can switch off per request (the "without a limit" side of the A/B);
 * - `dynamo`: shared/local/dynamo.ts → shared-dynamo.ts, whose startDynamoLocal hands back the
 *   DynamoDB Local the bench's parent process started, so several local runtimes share one table.
 *
 * Only the resolution of those files changes (the platform is CommonJS under tsx, so this wraps
 * require's resolver, as bench/no-tracing/register.cjs does); the stubs themselves reach the real
 * modules. Nothing in shared/ knows about it.
 */
const Module = require('node:module');
const path = require('node:path');

const root = path.resolve(__dirname, '..', '..');
const SWAPS = {
  slots: [path.join(root, 'shared', 'domain', 'concurrency', 'slots.ts'), path.join(__dirname, 'admission-slots.ts')],
  dynamo: [path.join(root, 'shared', 'local', 'dynamo.ts'), path.join(__dirname, 'shared-dynamo.ts')],
};
const wanted = (process.env.BENCH_CONCURRENCY_STUBS || '').split(',').filter(Boolean);
for (const name of wanted) if (!SWAPS[name]) throw new Error(`BENCH_CONCURRENCY_STUBS: unknown stub "${name}" (${Object.keys(SWAPS).join(', ')})`);
const swapped = new Map(wanted.map((name) => SWAPS[name]));
const counts = new Map(wanted.map((name) => [SWAPS[name][1], 0]));

const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function resolveWithBenchStubs(request, parent, ...rest) {
  const resolved = resolveFilename.call(this, request, parent, ...rest);
  const stub = swapped.get(resolved);
  // The stubs import the real module: their own requests resolve as usual.
  if (!stub || (parent && parent.filename && parent.filename.startsWith(__dirname))) return resolved;
  counts.set(stub, counts.get(stub) + 1);
  return stub;
};
/** Per stub file name, how many imports were sent to it (the bench asserts each swap happened). */
globalThis.__concurrencyStubRedirects = () => Object.fromEntries([...counts].map(([file, n]) => [path.basename(file, '.ts'), n]));

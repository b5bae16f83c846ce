import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { buildSync, type BuildOptions, type Metafile } from 'esbuild';

/** One function's source: a unique name (its bundle directory) and its entry file, relative to the repository root. */
export interface BundleEntry {
  name: string;
  entry: string;
  /** Files copied beside the bundle, read by the function at run time (an operation's `bundleFiles`). */
  files?: { from: string; to: string }[];
}

/**
 * Whether the stack leaves `@aws-sdk/*` to the runtime (true) or bundles it (false). Decided by
 * measurement: `npm run bench`, section (b), loads every function both ways in the same run.
 */
export const DEFAULT_EXTERNAL_AWS_SDK = false;

export interface BundleOptions {
  /** Repository root the entries are relative to. */
  rootDir: string;
  /** Directory the bundles are written to, one sub-directory per entry; emptied first. */
  outDir: string;
  /**
   * Leave `@aws-sdk/*` out of the bundles (default `DEFAULT_EXTERNAL_AWS_SDK`, false). The nodejs22.x runtime ships the
   * AWS SDK v3, so leaving it out makes bundles several hundred KB smaller and module load
   * faster; the price is that the SDK version is the runtime's, not our lock file's. Set it
   * to false to pin the SDK in every bundle (tree-shaken) when a feature needs a newer SDK.
   */
  externalAwsSdk?: boolean;
}

/** What one build produced: the directory holding each entry's `index.mjs` and `chunks/`, and sizes for the record. */
export interface BundleResult {
  dirs: Map<string, string>;
  /**
   * Bytes each function loads at start, by entry name: its `index.mjs` plus the chunks reachable
   * from it through static `import` statements (chunks behind a dynamic `import()` excluded).
   */
  sizes: Map<string, number>;
  /** Bytes of all the code in each function's directory (`index.mjs` and every chunk), by entry name. */
  totalSizes: Map<string, number>;
  millis: number;
}

// A bundle in ESM format that contains a CommonJS dependency calling `require()` (for a Node
// built-in, say) fails with "Dynamic require is not supported"; giving the module a real
// `require` made from its own URL fixes that. The alias keeps the import from clashing
// with a bundled module's own `createRequire`. esbuild puts the banner on every chunk too.
const REQUIRE_BANNER = "import { createRequire as __vapCreateRequire } from 'node:module'; const require = __vapCreateRequire(import.meta.url);";

/**
 * Bundles every entry into its own directory: `index.mjs`, its map, and `chunks/` holding what
 * the function reaches only through a dynamic `import()` (the S3 and SQS clients, the phone
 * rules, the SDK's lazily loaded credential providers). Code splitting is per function because
 * V8 pre-parses every byte of a file it loads: a dynamic import's target inlined into
 * `index.mjs` costs load time on every cold start even when its path never runs, while in a
 * chunk it is not even read until then. One esbuild call per entry (about 0.45 s each on a
 * quiet machine; 81 s for the stack's 114 on a busy 2-core one); a single splitting pass over
 * all entries builds in seconds but splits by module across functions, leaving each function
 * 25-33 statically imported chunk files that loaded slower (docs/operations.md, "Bundles and
 * cold starts").
 * Fails with one message naming every missing entry file, before building.
 */
export function bundleEntries(entries: BundleEntry[], options: BundleOptions): BundleResult {
  const started = Date.now();
  const names = new Set<string>();
  for (const { name } of entries) {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`Bundle name "${name}" must be a plain directory name.`);
    if (names.has(name)) throw new Error(`Two functions share the bundle name "${name}".`);
    names.add(name);
  }
  const missingFiles = entries.flatMap((e) => (e.files ?? []).filter((f) => !existsSync(path.resolve(options.rootDir, f.from))).map((f) => `${f.from} (shipped with ${e.name})`));
  if (missingFiles.length > 0) throw new Error(`Cannot bundle: files to ship do not exist: ${missingFiles.join(', ')}`);
  const missing = entries.filter((e) => !existsSync(path.resolve(options.rootDir, e.entry)));
  if (missing.length > 0) {
    throw new Error(
      `Cannot bundle: ${missing.length} entry file(s) do not exist:\n` +
        missing.map((e) => `  - ${e.entry} (function ${e.name})`).join('\n') +
        '\nCreate them, or fix the entry path in shared/http/registry.ts or shared/jobs/registry.ts.',
    );
  }

  rmSync(options.outDir, { recursive: true, force: true });
  mkdirSync(options.outDir, { recursive: true });
  const common: BuildOptions = {
    absWorkingDir: options.rootDir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    platform: 'node',
    target: 'node22',
    format: 'esm',
    // Prefer ESM builds of dependencies: they tree-shake, CommonJS builds do not.
    mainFields: ['module', 'main'],
    minify: true,
    treeShaking: true,
    // Linked maps (a `//# sourceMappingURL` comment) are what NODE_OPTIONS=--enable-source-maps
    // needs for readable stack traces; without sources inside, a map stays small.
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'none',
    external: (options.externalAwsSdk ?? DEFAULT_EXTERNAL_AWS_SDK) ? ['@aws-sdk/*'] : [],
    banner: { js: REQUIRE_BANNER },
    // Modules that load lazily in Lambda load eagerly when unbundled (shared/domain/common/phone-field.ts).
    define: { 'process.env.VAP_LAZY_MODULES': '"true"' },
    // An operation's response schema is read only by the OpenAPI document and the tests; its
    // area's `RESPONSES:` block goes, so a function never builds it at start (the schema itself is
    // a pure declaration, dropped once nothing reads it).
    dropLabels: ['RESPONSES'],
    metafile: true,
    logLevel: 'silent',
  };

  const merged: Metafile = { inputs: {}, outputs: {} };
  const dirs = new Map<string, string>();
  const sizes = new Map<string, number>();
  const totalSizes = new Map<string, number>();
  const entriesDir = path.join(options.outDir, '.entries');
  mkdirSync(entriesDir, { recursive: true });
  for (const { name, entry, files } of entries) {
    const dir = path.join(options.outDir, name);
    let metafile: Metafile;
    try {
      const wrapper = path.join(entriesDir, `${name}.mjs`);
      writeFileSync(wrapper, lambdaEntry(path.resolve(options.rootDir, entry), options.rootDir));
      metafile = buildSync({ ...common, entryPoints: { index: wrapper }, outdir: dir }).metafile!;
    } catch (error) {
      throw new Error(`esbuild failed to bundle the Lambda function ${name} (${entry}): ${(error as Error).message}`, { cause: error });
    }
    for (const file of files ?? []) {
      if (!/^[A-Za-z0-9._-]+$/.test(file.to) || file.to === 'index.mjs') throw new Error(`Function ${name}: "${file.to}" must be a plain file name other than index.mjs.`);
      copyFileSync(path.resolve(options.rootDir, file.from), path.join(dir, file.to));
    }
    Object.assign(merged.inputs, metafile.inputs);
    Object.assign(merged.outputs, metafile.outputs);
    dirs.set(name, dir);
    const index = path.relative(options.rootDir, path.join(dir, 'index.mjs')).split(path.sep).join('/');
    sizes.set(name, sum(staticallyLoaded(metafile, index), metafile));
    totalSizes.set(name, sum(Object.keys(metafile.outputs).filter((file) => file.endsWith('.mjs')), metafile));
  }
  writeFileSync(path.join(options.outDir, 'metafile.json'), JSON.stringify(merged));
  return { dirs, sizes, totalSizes, millis: Date.now() - started };
}

/** The exports a function's bundle may name as its `Handler` (lib/api-function.ts `handlerExport`). */
const HANDLER_EXPORTS = ['handler', 'streamHandler'];

/**
 * A bundle's real entry: the function's module, its handlers wrapped by the trace export
 * extension (shared/telemetry/lambda-extension.ts). The top-level await holds the function's
 * init until the extension is registered, which Lambda accepts only then; with tracing off it
 * resolves at once and the handlers are the module's own.
 */
function lambdaEntry(entry: string, rootDir: string): string {
  const extension = path.resolve(rootDir, 'shared/telemetry/lambda-extension.ts');
  return [
    `import * as fn from ${JSON.stringify(entry)};`,
    `import { lambdaHandlers } from ${JSON.stringify(extension)};`,
    'const wrap = await lambdaHandlers();',
    ...HANDLER_EXPORTS.map((name) => `export const ${name} = wrap(fn.${name});`),
    '',
  ].join('\n');
}

/**
 * The output files Node reads when it loads `index` (a key of the metafile's `outputs`): the file
 * itself and every bundled file reachable through static `import` statements, not through `import()`.
 */
export function staticallyLoaded(metafile: Metafile, index: string): string[] {
  const seen = new Set<string>();
  const stack = [index];
  while (stack.length > 0) {
    const file = stack.pop()!;
    if (seen.has(file) || !metafile.outputs[file]) continue;
    seen.add(file);
    for (const imported of metafile.outputs[file].imports) {
      if (imported.kind === 'import-statement' && !imported.external) stack.push(imported.path);
    }
  }
  return [...seen];
}

const sum = (files: string[], metafile: Metafile) => files.reduce((total, file) => total + metafile.outputs[file]!.bytes, 0);

/** Code for each function: the real bundle, or a placeholder when this synthesis skips bundling. */
export interface CodeSource {
  code(name: string): lambda.Code;
  /** False when functions get placeholder code (unit tests, `cdk ls`, stacks not being deployed). */
  readonly bundled: boolean;
}

/** Bundles all entries now, once, and hands out `Code.fromAsset` per function. */
export function bundledCode(entries: BundleEntry[], options: BundleOptions): CodeSource & { result: BundleResult } {
  const result = bundleEntries(entries, options);
  return {
    bundled: true,
    result,
    code(name) {
      const dir = result.dirs.get(name);
      if (!dir) throw new Error(`No bundle named "${name}": it was not among the entries bundled.`);
      return lambda.Code.fromAsset(dir);
    },
  };
}

/**
 * Placeholder code for syntheses that will not be deployed. It is never run; it throws if it
 * is, so a stack synthesized this way and deployed by mistake fails loudly.
 */
export function placeholderCode(): CodeSource {
  const code = lambda.Code.fromInline(
    "exports.handler = async () => { throw new Error('Placeholder code: this stack was synthesized without bundling.'); };",
  );
  return { bundled: false, code: () => code };
}

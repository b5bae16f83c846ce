/**
 * A module loaded on first use, behind a dynamic `import()` (the phone rules, phone-field.ts; the
 * agent tests' pattern engine, agent-tests/patterns.ts): a module reached only through an
 * `import()` runs, and in a bundle is even read, only when its path does, so a function that
 * never needs it never pays for it at cold start. `importer` is the caller's own `() =>
 * import('./module')`, so the bundler sees the import where it is written.
 *
 * Unbundled (the local runtime, tests, scripts) everything is loaded anyway: the module is loaded
 * at once, so code that parses schemas built on it synchronously keeps working. Lambda bundles
 * define VAP_LAZY_MODULES (lib/bundle.ts), and there it waits for its first use.
 */
export interface LazyModule<M> {
  /** The module, loaded on first use. */
  load(): Promise<M>;
  /**
   * Runs `use` with the module: at once when it is loaded, else once it is (a promise). A schema
   * check built on it is synchronous after the first load and asynchronous before it; the
   * validation middleware parses with `safeParseAsync`, so both work there.
   */
  use<T>(use: (module: M) => T): T | Promise<T>;
}

export function lazyModule<M>(importer: () => Promise<M>): LazyModule<M> {
  let loaded: M | undefined;
  const load = async () => (loaded ??= await importer());
  if (process.env.VAP_LAZY_MODULES !== 'true') void load();
  return { load, use: (use) => (loaded ? use(loaded) : load().then(use)) };
}

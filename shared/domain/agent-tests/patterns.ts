/**
 * `reply_matches` patterns are written by users, so they run in a linear-time engine (re2js, a
 * pure-JavaScript port of RE2): no pattern can make a match take more than time proportional to
 * the reply, so nothing a user writes blocks the event loop (a backtracking `(a+)+$` over 29 a's
 * and a '!' took 5.6 s with RegExp). RE2 syntax: no lookaround, no backreferences; a pattern is
 * checked when the test is written (400 naming it) and compiled again, from memory, at run time.
 * A reply longer than MAX_MATCH_INPUT characters is matched on its first MAX_MATCH_INPUT.
 *
 * The engine (pattern-engine.ts, ~147 KB) loads on the first pattern checked or matched, not at
 * cold start: every function whose operations build the agent-test schemas (the agents' and the
 * tests' areas) used to load it at start, and only writing a test or running one needs it.
 */

type PatternEngine = typeof import('./pattern-engine');
let loaded: PatternEngine | undefined;

/** The engine, loaded on first use. */
export async function patternEngine(): Promise<PatternEngine> {
  return (loaded ??= await import('./pattern-engine'));
}

/**
 * Runs `use` with the engine: at once when it is loaded, else once it is (a promise). A schema
 * check built on it is synchronous after the first load and asynchronous before it; the
 * validation middleware parses with `safeParseAsync`, so both work there.
 */
export function withPatternEngine<T>(use: (engine: PatternEngine) => T): T | Promise<T> {
  return loaded ? use(loaded) : patternEngine().then(use);
}

// Unbundled (the local runtime, tests, scripts), everything is loaded anyway: load the engine now,
// so code that parses these schemas synchronously keeps working. Lambda bundles define
// VAP_LAZY_MODULES (lib/bundle.ts), and there the engine waits for the first pattern.
if (process.env.VAP_LAZY_MODULES !== 'true') void patternEngine();

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

import { lazyModule } from '../common/lazy-module';

type PatternEngine = typeof import('./pattern-engine');
const engine = /* @__PURE__ */ lazyModule<PatternEngine>(() => import('./pattern-engine'));

/** The engine, loaded on first use. */
export const patternEngine = (): Promise<PatternEngine> => engine.load();

/** Runs `use` with the engine: at once when it is loaded, else once it is (a promise; common/lazy-module.ts). */
export const withPatternEngine = <T>(use: (engine: PatternEngine) => T): T | Promise<T> => engine.use(use);

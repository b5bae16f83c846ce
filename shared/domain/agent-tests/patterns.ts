import { RE2JS } from 're2js';

/**
 * `reply_matches` patterns are written by users, so they run in a linear-time engine (re2js, a
 * pure-JavaScript port of RE2): no pattern can make a match take more than time proportional to
 * the reply, so nothing a user writes blocks the event loop (a backtracking `(a+)+$` over 29 a's
 * and a '!' took 5.6 s with RegExp). RE2 syntax: no lookaround, no backreferences; a pattern is
 * checked when the test is written (400 naming it) and compiled again, from memory, at run time.
 * A reply longer than MAX_MATCH_INPUT characters is matched on its first MAX_MATCH_INPUT.
 */

/** The longest reply text a pattern is matched against (characters). */
export const MAX_MATCH_INPUT = 10_240;

const compiled = new Map<string, RE2JS>();

/** The compiled pattern (kept: a run matches the same few patterns many times). */
export function compilePattern(pattern: string): RE2JS {
  let re = compiled.get(pattern);
  if (!re) {
    re = RE2JS.compile(pattern);
    if (compiled.size >= 500) compiled.delete(compiled.keys().next().value!);
    compiled.set(pattern, re);
  }
  return re;
}

/** Why the pattern cannot be used (RE2's own words), or undefined when it compiles. */
export function patternProblem(pattern: string): string | undefined {
  try {
    compilePattern(pattern);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Whether the pattern matches somewhere in the first MAX_MATCH_INPUT characters of `text`. */
export function patternMatches(pattern: string, text: string): boolean {
  return compilePattern(pattern).test(text.length > MAX_MATCH_INPUT ? text.slice(0, MAX_MATCH_INPUT) : text);
}

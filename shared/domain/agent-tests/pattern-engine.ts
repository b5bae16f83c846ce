import { RE2JS } from 're2js';

/**
 * The linear-time engine behind `reply_matches` (patterns.ts says why): re2js, ~147 KB, in a
 * module of its own so that only what checks or runs a pattern loads it (patterns.ts `patternEngine`).
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

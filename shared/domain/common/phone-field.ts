import * as z from 'zod/mini';
import type { NormalizeOptions } from './phone';

type PhoneRules = typeof import('./phone');
let loaded: PhoneRules | undefined;

/**
 * The phone rules (libphonenumber-js with its full metadata, ~190 KB) load on the first number
 * checked, not at cold start: a module reached only through this `import()` runs only when a
 * phone number is checked, so a function whose operation never checks one never loads them,
 * even when its area's schemas (built with the operation module) mention phone fields.
 */
export async function phoneRules(): Promise<PhoneRules> {
  return (loaded ??= await import('./phone'));
}

/**
 * Runs `use` with the phone rules: at once when they are loaded, else once they are (a promise).
 * A schema check built on it is synchronous after the first load and asynchronous before it;
 * the validation middleware parses with `safeParseAsync`, so both work there.
 */
export function withPhoneRules<T>(use: (rules: PhoneRules) => T): T | Promise<T> {
  return loaded ? use(loaded) : phoneRules().then(use);
}

// Unbundled (the local runtime, tests, scripts), everything is loaded anyway: load the rules now,
// so code that parses these schemas synchronously keeps working. Lambda bundles define
// VAP_LAZY_MODULES (lib/bundle.ts), and there the rules wait for the first phone number.
if (process.env.VAP_LAZY_MODULES !== 'true') void phoneRules();

/**
 * A zod schema for a phone number field: a string normalized to E.164 on parse; an invalid
 * number is an issue on that field, so the validation middleware names it in the 400.
 */
export const e164 = (options: Omit<NormalizeOptions, 'field'> = {}) =>
  z.pipe(
    z.string().check(z.maxLength(40)),
    z.transform((value: string, ctx) =>
      withPhoneRules((rules) => {
        const result = rules.parseE164(value, options);
        if ('e164' in result) return result.e164;
        ctx.issues.push({ code: 'custom', message: result.problem, input: value });
        return z.NEVER;
      }),
    ),
  );

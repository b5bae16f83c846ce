import * as z from 'zod/mini';
import type { NormalizeOptions } from './phone';
import { lazyModule } from './lazy-module';

type PhoneRules = typeof import('./phone');

/**
 * The phone rules (libphonenumber-js with its full metadata, ~190 KB) load on the first number
 * checked, not at cold start (lazy-module.ts): a function whose operation never checks one never
 * loads them, even when its area's schemas (built with the operation module) mention phone fields.
 */
const rules = /* @__PURE__ */ lazyModule<PhoneRules>(() => import('./phone'));

/** The phone rules, loaded on first use. */
export const phoneRules = (): Promise<PhoneRules> => rules.load();

/** Runs `use` with the phone rules: at once when they are loaded, else once they are (a promise; lazy-module.ts). */
export const withPhoneRules = <T>(use: (rules: PhoneRules) => T): T | Promise<T> => rules.use(use);

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

import * as z from 'zod/mini';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import { ValidationError } from '../../errors';

/**
 * Phone numbers in E.164, through libphonenumber-js with its full ("max") metadata, so a
 * number is checked against its country's real numbering plan, not only its length.
 */
export interface NormalizeOptions {
  /** ISO 3166 alpha-2 country assumed when the input has no leading `+`. Without it, `+` is required. */
  defaultCountry?: string;
  /** The field named in the 400 (default `phone`). */
  field?: string;
}

const INVALID = 'must be a valid phone number in E.164 format (for example +14155550123)';
// Separators people type; anything else (letters, vanity numbers, extensions) is refused.
const ALLOWED = /^\+?[\d\s\-().\/]+$/;

/** The E.164 form of `input`, or undefined when it is not a valid number. */
export function tryNormalizeE164(input: unknown, options: Omit<NormalizeOptions, 'field'> = {}): string | undefined {
  if (typeof input !== 'string') return undefined;
  const raw = input.trim();
  if (!raw || raw.length > 40 || !ALLOWED.test(raw)) return undefined;
  const hasPlus = raw.startsWith('+');
  if (!hasPlus && !options.defaultCountry) return undefined;
  const parsed = parsePhoneNumberFromString(raw, hasPlus ? undefined : (options.defaultCountry!.toUpperCase() as CountryCode));
  return parsed?.isValid() ? parsed.number : undefined;
}

/** The E.164 form of `input`; a 400 naming the field otherwise. Accepts spaces, dashes, dots and parentheses. */
export function normalizeE164(input: unknown, options: NormalizeOptions = {}): string {
  const e164 = tryNormalizeE164(input, options);
  if (!e164) throw ValidationError.field(options.field ?? 'phone', INVALID);
  return e164;
}

/** The ISO country of a valid E.164 number (`+14155550123` → `US`). */
export function countryOfE164(e164: string): string | undefined {
  return parsePhoneNumberFromString(e164)?.country;
}

/**
 * A zod schema for a phone number field: a string normalized to E.164 on parse; an invalid
 * number is an issue on that field, so the validation middleware names it in the 400.
 */
export const e164 = (options: Omit<NormalizeOptions, 'field'> = {}) =>
  z.pipe(
    z.string().check(z.maxLength(40)),
    z.transform((value: string, ctx) => {
      const normalized = tryNormalizeE164(value, options);
      if (normalized) return normalized;
      ctx.issues.push({ code: 'custom', message: INVALID, input: value });
      return z.NEVER;
    }),
  );

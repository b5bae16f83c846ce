import { getCountryCallingCode, parsePhoneNumberFromString, validatePhoneNumberLength, type CountryCode } from 'libphonenumber-js/max';
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

const E164 = 'must be E.164, such as +14155550123';
// Separators people type; anything else (letters, vanity numbers, extensions) is refused.
const ALLOWED = /^\+?[\d\s\-().\/]+$/;
const LENGTH_PROBLEMS: Record<string, string> = {
  TOO_SHORT: 'is too short',
  TOO_LONG: 'is too long',
  INVALID_LENGTH: 'has a length no number of its country has',
  INVALID_COUNTRY: 'has an unknown country code',
  NOT_A_NUMBER: E164,
};

/** The E.164 form of `input`, or what is wrong with it (a message for `error.details.fields`). */
export function parseE164(input: unknown, options: Omit<NormalizeOptions, 'field'> = {}): { e164: string } | { problem: string } {
  if (typeof input !== 'string') return { problem: E164 };
  const raw = input.trim();
  if (!raw || raw.length > 40 || !ALLOWED.test(raw)) return { problem: `${E164} (digits after +; spaces, dashes, dots and parentheses allowed)` };
  const hasPlus = raw.startsWith('+');
  if (!hasPlus && !options.defaultCountry) return { problem: `${E164} (start with + and the country code)` };
  const country = hasPlus ? undefined : (options.defaultCountry!.toUpperCase() as CountryCode);
  const length = validatePhoneNumberLength(raw, country);
  if (length) return { problem: LENGTH_PROBLEMS[length] ?? E164 };
  const parsed = parsePhoneNumberFromString(raw, country);
  if (parsed?.isValid()) return { e164: parsed.number };
  const where = parsed?.country ?? parsed?.getPossibleCountries()[0] ?? country;
  return { problem: where ? `is not a valid ${where} number` : 'is not a valid phone number' };
}

/** The E.164 form of `input`, or undefined when it is not a valid number. */
export function tryNormalizeE164(input: unknown, options: Omit<NormalizeOptions, 'field'> = {}): string | undefined {
  const result = parseE164(input, options);
  return 'e164' in result ? result.e164 : undefined;
}

/** The E.164 form of `input`; a 400 naming the field and what is wrong otherwise. Accepts spaces, dashes, dots and parentheses. */
export function normalizeE164(input: unknown, options: NormalizeOptions = {}): string {
  const result = parseE164(input, options);
  if ('problem' in result) throw ValidationError.field(options.field ?? 'phone', result.problem);
  return result.e164;
}

/** The ISO country of a valid E.164 number (`+14155550123` → `US`). */
export function countryOfE164(e164: string): string | undefined {
  return partsOfE164(e164)?.country;
}

/** The country calling code of an ISO country (`GB` → `44`). */
export function callingCodeOf(country: string): string {
  return getCountryCallingCode(country as CountryCode);
}

/** The ISO country and national significant number of a valid E.164 number. */
export function partsOfE164(e164: string): { country: string; nationalNumber: string } | undefined {
  const parsed = parsePhoneNumberFromString(e164);
  return parsed?.country ? { country: parsed.country, nationalNumber: String(parsed.nationalNumber) } : undefined;
}

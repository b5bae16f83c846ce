/**
 * Phone numbers never leave in a span (docs/operations.md, "Traces"): E.164 numbers, written or
 * URL-encoded (`%2B1555…`), become `[phone]` in every string attribute, whatever set it (our
 * hooks, the fetch instrumentation's URLs).
 */
const E164 = /(?:\+|%2B)[1-9]\d{6,14}/gi;

/** Whether the text may hold a number: a `+`, or a `%` of its URL-encoded form (most attributes have neither). */
const mayHoldPhone = (text: string) => text.length > 7 && (text.includes('+') || text.includes('%'));

/** The text with every E.164 number replaced. */
export function scrubPhones(text: string): string {
  return mayHoldPhone(text) ? text.replace(E164, '[phone]') : text;
}

/** Scrubs string (and string array) attribute values in place (every span's, as it ends: so cheap for the common case). */
export function scrubAttributes(attributes: Record<string, unknown>): void {
  for (const key in attributes) {
    const value = attributes[key];
    if (typeof value === 'string') {
      if (mayHoldPhone(value)) attributes[key] = scrubPhones(value);
    } else if (Array.isArray(value) && value.some((v) => typeof v === 'string' && mayHoldPhone(v))) {
      attributes[key] = value.map((v) => (typeof v === 'string' ? scrubPhones(v) : v));
    }
  }
}

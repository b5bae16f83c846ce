/**
 * Phone numbers never leave in a span (docs/operations.md, "Traces"): E.164 numbers, written or
 * URL-encoded (`%2B1555…`), become `[phone]` in every string attribute, whatever set it (our
 * hooks, the fetch instrumentation's URLs).
 */
const E164 = /(?:\+|%2B)[1-9]\d{6,14}/gi;

/** The text with every E.164 number replaced. */
export function scrubPhones(text: string): string {
  return text.replace(E164, '[phone]');
}

/** Scrubs string (and string array) attribute values in place. */
export function scrubAttributes(attributes: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(attributes)) {
    if (typeof value === 'string') attributes[key] = scrubPhones(value);
    else if (Array.isArray(value)) attributes[key] = value.map((v) => (typeof v === 'string' ? scrubPhones(v) : v));
  }
}

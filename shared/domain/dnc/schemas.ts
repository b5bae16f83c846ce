import * as z from 'zod/mini';
import { pageQueryShape } from '../common/schemas';
import { withPhoneRules } from '../common/phone-field';
import { named } from '../common/named';
import { lazy } from '../common/lazy';

const INVALID_PHONE = 'must be a valid phone number: E.164 (+14155550123), any punctuation allowed, or a national number with `country`';

/** ISO 3166-1 alpha-2, the country a national number (no leading `+`) is read in. */
const country = /* @__PURE__ */ lazy(() => z.string().check(z.regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 country code (for example US)')));

/** `phone` must normalize, with `country` when given; the issue names `phone`. */
const phoneNormalizes = /* @__PURE__ */ lazy(() => z.superRefine((value: { phone?: string; country?: string }, ctx) =>
  withPhoneRules((rules) => {
    if (value.phone !== undefined && !rules.tryNormalizeE164(value.phone, { defaultCountry: value.country })) {
      ctx.issues.push({ code: 'custom', path: ['phone'], message: INVALID_PHONE, input: value.phone });
    }
  }),
));

const phoneInput = /* @__PURE__ */ lazy(() => z.string().check(z.minLength(1), z.maxLength(40)));

export const AddDncBody = /* @__PURE__ */ named(
  'AddDncEntryRequest',
  () => z
    .strictObject({
      phone: phoneInput,
      country: z.optional(country),
      reason: z._default(z.string().check(z.maxLength(500)), ''),
      source: z._default(z.string().check(z.maxLength(100)), ''),
    })
    .check(phoneNormalizes),
  'A number to put on the do-not-call list: E.164, or national with `country`',
);
export type AddDncInput = z.output<typeof AddDncBody>;

/**
 * The list; `phone` (with `country` for a national number) narrows it to that one number. A
 * number without `+` and without `country` is read as international digits: a `+` typed into a
 * query string unencoded arrives as a space.
 */
export const DncListQuery = /* @__PURE__ */ lazy(() => z
  .strictObject({ ...pageQueryShape, phone: z.optional(phoneInput), country: z.optional(country) })
  .check(
    z.superRefine((q, ctx) =>
      withPhoneRules((rules) => {
        if (q.phone !== undefined && !filterPhone(rules.tryNormalizeE164, q.phone, q.country)) {
          ctx.issues.push({ code: 'custom', path: ['phone'], message: INVALID_PHONE, input: q.phone });
        }
      }),
    ),
  ));
export type DncListInput = z.output<typeof DncListQuery>;

/** The E.164 number a list filter means, or undefined. */
export function dncFilterPhone(phone: string, country?: string): string | undefined | Promise<string | undefined> {
  return withPhoneRules((rules) => filterPhone(rules.tryNormalizeE164, phone, country));
}

function filterPhone(normalize: (input: unknown, options: { defaultCountry?: string }) => string | undefined, phone: string, country?: string) {
  const raw = phone.trim();
  return normalize(country || raw.startsWith('+') ? raw : `+${raw}`, { defaultCountry: country });
}

/** `{phone}` in the path: exactly an E.164 number (`+` as is or URL-encoded as `%2B`). */
export const DncPhoneParams = /* @__PURE__ */ lazy(() => z.strictObject({
  phone: z.pipe(
    z.string().check(z.regex(/^(?:\+|%2[Bb])[1-9]\d{1,14}$/, 'must be an E.164 number such as +14155550123 (URL-encode the + as %2B)')),
    z.transform((value: string) => value.replace(/^%2B/i, '+')),
  ),
}));

export const DncEntry = /* @__PURE__ */ named('DncEntry', () => z.object({
  phone: z.string(),
  reason: z.string(),
  source: z.string(),
  created_at: z.string(),
}), 'A number on the do-not-call list (E.164); no campaign dials it');
export type DncEntry = z.output<typeof DncEntry>;

/** Why a number must not be dialed, and the `error_message` a campaign contact gets. */
export const DNC_MESSAGES = { do_not_call: 'on do-not-call list', opt_out: 'contact opted out' } as const;
export type DialBlock = keyof typeof DNC_MESSAGES;

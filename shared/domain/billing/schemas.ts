import * as z from 'zod/mini';
import { named } from '../common/named';
import { pageQueryShape } from '../common/schemas';
import { lazy } from '../common/lazy';

export const CHARGE_REASONS = ['number_purchase', 'number_renewal', 'call_minutes'] as const;
export type ChargeReason = (typeof CHARGE_REASONS)[number];

export const ChargeListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

/**
 * One entry of the ledger. `amount` is the exact decimal in `currency`; `amount_units` is the same
 * amount as an integer count of 10^-`amount_scale` of the currency (scale 4 since charges keep the
 * carrier's precision: 140 units = 0.014 USD; charges written before are scale 2, cents). Sum
 * `amount_units` (or read `GET /billing/total`), not `amount`. Number charges carry the month they
 * pay for (`period_start` to `period_end`).
 */
export const Charge = /* @__PURE__ */ named('Charge', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  amount: z.number(),
  amount_units: z.int(),
  amount_scale: z.int(),
  currency: z.string(),
  reason: z.enum(CHARGE_REASONS),
  description: z.string(),
  resource_type: z.string(),
  resource_id: z.string(),
  phone_number: z.optional(z.string()),
  /** The month a number charge pays for (purchase: the first month; renewal: the month renewed), UTC ISO. */
  period_start: z.optional(z.string()),
  period_end: z.optional(z.string()),
  created_at: z.string(),
}), 'One entry of the billing ledger');
export type Charge = z.output<typeof Charge>;

export const ChargesTotalQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  /** Only charges created at or after this instant. */
  from: z.optional(z.iso.datetime({ offset: true })),
  /** Only charges created before this instant. */
  to: z.optional(z.iso.datetime({ offset: true })),
}));
export type ChargesTotalQuery = z.output<typeof ChargesTotalQuery>;

/** The exact sum of the ledger in one currency. */
export const CurrencyTotal = /* @__PURE__ */ named('CurrencyTotal', () => z.object({
  currency: z.string(),
  /** The sum as a number (exact for any ledger below 9 × 10^11 units). */
  amount: z.number(),
  /** The sum as a decimal string with `amount_scale` places, e.g. "14.0000". */
  amount_decimal: z.string(),
  amount_units: z.int(),
  amount_scale: z.int(),
  /** How many charges were added. */
  charges: z.int(),
}), 'The exact sum of the charges in one currency');

export const ChargesTotal = /* @__PURE__ */ named('ChargesTotal', () => z.object({
  totals: z.array(CurrencyTotal),
  from: z.nullable(z.string()),
  to: z.nullable(z.string()),
}), 'The exact sums of the ledger, per currency, over the charges created in [from, to)');
export type ChargesTotal = z.output<typeof ChargesTotal>;

import * as z from 'zod/mini';
import { named } from '../common/named';
import { pageQueryShape } from '../common/schemas';
import { lazy } from '../common/lazy';

export const CHARGE_REASONS = ['number_purchase', 'number_renewal', 'call_minutes'] as const;
export type ChargeReason = (typeof CHARGE_REASONS)[number];

export const ChargeListQuery = lazy(() => z.strictObject(pageQueryShape));

/**
 * One entry of the ledger. `amount` is a decimal in `currency` with two places; `amount_cents` is
 * the same, exact. Number charges carry the month they pay for (`period_start` to `period_end`).
 */
export const Charge = named('Charge', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  amount: z.number(),
  amount_cents: z.int(),
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

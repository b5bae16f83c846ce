import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { collections, keys, Prefix } from '../../db/keys';
import { putNew, stripKeys, type CounterDelta, type PageRequest } from '../../db/store';
import { listCollection } from '../common/collection';
import type { Charge, ChargeReason } from './schemas';

type ChargeItem = Charge & { pk: string; sk: string; entity: string };

const ENTITY = 'CHARGE';
const CURRENCY = 'USD';

export interface ChargeInput {
  /** Decimal amount in USD; rounded to cents. */
  amount: number;
  reason: ChargeReason;
  description: string;
  resourceType: string;
  resourceId: string;
  phoneNumber?: string;
  /** The month the charge pays for, when it pays for one. */
  period?: { start: string; end: string };
  at: string;
  /** A fixed id makes the write idempotent (its put is attribute_not_exists); default a fresh UUID v7. */
  id?: string;
}

/**
 * A charge to write inside the transaction that causes it (a purchase writes its number and its
 * charge together, so there is never one without the other), with its counter change.
 */
export function chargeWrite(orgId: string, input: ChargeInput) {
  const cents = Math.round(input.amount * 100);
  const charge: Charge = {
    id: input.id ?? uuidv7(),
    organization_id: orgId,
    amount: cents / 100,
    amount_cents: cents,
    currency: CURRENCY,
    reason: input.reason,
    description: input.description,
    resource_type: input.resourceType,
    resource_id: input.resourceId,
    ...(input.phoneNumber ? { phone_number: input.phoneNumber } : {}),
    ...(input.period ? { period_start: input.period.start, period_end: input.period.end } : {}),
    created_at: input.at,
  };
  const counter: CounterDelta = { orgId, collection: collections.charges, delta: 1 };
  return { charge, item: putNew({ ...keys.charge(orgId, charge.id), entity: ENTITY, ...charge }), counter };
}

/**
 * A charge id derived from what it pays for: the same `seed` always gives the same id, so a
 * retried or concurrent write finds the charge written (its put is attribute_not_exists) and
 * cannot charge twice. Shaped as a UUID v7 stamped with `at` (the rest is a SHA-256 of the
 * seed), so it sorts into the ledger at that time.
 */
export function derivedChargeId(seed: string, at: string): string {
  const ms = Date.parse(at);
  if (!Number.isFinite(ms)) throw new Error(`Not an ISO time: ${at}`);
  const hash = createHash('sha256').update(seed).digest('hex');
  const time = ms.toString(16).padStart(12, '0');
  const variant = ((parseInt(hash[3]!, 16) & 0x3) | 0x8).toString(16);
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${hash.slice(0, 3)}-${variant}${hash.slice(4, 7)}-${hash.slice(7, 19)}`;
}

/** The id of the renewal charge of one number for the period starting at `periodStart`. */
export function renewalChargeId(numberId: string, periodStart: string): string {
  return derivedChargeId(`renewal:${numberId}:${periodStart}`, periodStart);
}

/** The id of the minutes charge of one call (one per call, whoever ends it). */
export function callChargeId(callId: string, endedAt: string): string {
  return derivedChargeId(`call:${callId}`, endedAt);
}

export function listCharges(orgId: string, query: PageRequest) {
  return listCollection(orgId, Prefix.charge, collections.charges, query, (item: ChargeItem) => stripKeys(item) as Charge);
}

import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { collections, keys, Prefix } from '../../db/keys';
import { putNew, queryAll, stripKeys, type CounterDelta, type PageRequest } from '../../db/store';
import { listCollection } from '../common/collection';
import type { Charge, ChargeReason, ChargesTotal, ChargesTotalQuery } from './schemas';

/**
 * A stored charge. Since charges keep the carrier's precision, an item holds its amount as
 * `amount_units` integer units of 10^-`amount_scale` of the currency (scale 4: 140 is 0.014 USD).
 * Items written before hold `amount_cents` (and no scale): they read as scale 2, unchanged.
 */
type ChargeItem = Omit<Charge, 'amount_units' | 'amount_scale'> & {
  pk: string; sk: string; entity: string;
  amount_units?: number; amount_scale?: number; amount_cents?: number;
};

const ENTITY = 'CHARGE';
const CURRENCY = 'USD';
/** Decimal places every new charge keeps: 1/10,000 of the currency unit, as carriers price. */
export const AMOUNT_SCALE = 4;
const LEGACY_CENTS_SCALE = 2;

/** A decimal amount in integer units of 10^-AMOUNT_SCALE, rounded half away from zero at that precision. */
export function toUnits(amount: number): number {
  if (!Number.isFinite(amount)) throw new Error(`Not an amount: ${amount}`);
  // Through the decimal string, so 0.014 * 10^4 is 140 and not 140.00000000000003 rounded.
  const units = Math.round(Number(`${Math.abs(amount)}e${AMOUNT_SCALE}`));
  return amount < 0 ? -units : units;
}

/** `units` of 10^-scale as a decimal string with exactly `scale` places (140, 4 → "0.0140"). */
export function unitsToDecimal(units: number | bigint, scale: number): string {
  const big = BigInt(units);
  const digits = (big < 0n ? -big : big).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  return `${big < 0n ? '-' : ''}${whole}${scale > 0 ? `.${digits.slice(digits.length - scale)}` : ''}`;
}

/** The exact amount of a stored charge, old (cents) or new (units and scale). */
function storedAmount(item: ChargeItem): { units: number; scale: number } {
  if (typeof item.amount_units === 'number') return { units: item.amount_units, scale: item.amount_scale ?? AMOUNT_SCALE };
  if (typeof item.amount_cents === 'number') return { units: item.amount_cents, scale: LEGACY_CENTS_SCALE };
  return { units: toUnits(item.amount), scale: AMOUNT_SCALE };
}

/** The API view of a stored charge: `amount` exact, with its integer units and their scale. */
export function chargeView(item: ChargeItem): Charge {
  const { units, scale } = storedAmount(item);
  const { amount_cents: _cents, amount_units: _units, amount_scale: _scale, ...rest } = stripKeys(item);
  return { ...rest, amount: Number(unitsToDecimal(units, scale)), amount_units: units, amount_scale: scale } as Charge;
}

export interface ChargeInput {
  /** Decimal amount in USD, kept to 1/10,000 (AMOUNT_SCALE places; more are rounded half up). */
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
  const units = toUnits(input.amount);
  const charge: Charge = {
    id: input.id ?? uuidv7(),
    organization_id: orgId,
    amount: Number(unitsToDecimal(units, AMOUNT_SCALE)),
    amount_units: units,
    amount_scale: AMOUNT_SCALE,
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
  return listCollection(orgId, Prefix.charge, collections.charges, query, chargeView);
}

/**
 * The exact sum of the ledger (or of the charges whose `created_at` is in [from, to)), per
 * currency: integer units added at the finest scale of the charges read (old cent items are
 * scale 2, so they are multiplied by 100 to join scale 4). Reads every charge (one Query, amounts
 * only), so it costs what listing the whole ledger costs.
 */
export async function chargesTotal(orgId: string, query: ChargesTotalQuery): Promise<ChargesTotal> {
  const sums = new Map<string, { units: bigint; scale: number; count: number }>();
  const from = query.from ? Date.parse(query.from) : -Infinity;
  const to = query.to ? Date.parse(query.to) : Infinity;
  for await (const item of queryAll<ChargeItem>(
    { pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.charge },
    ['created_at', 'currency', 'amount', 'amount_units', 'amount_scale', 'amount_cents'],
    true,
  )) {
    const at = Date.parse(item.created_at);
    if (at < from || at >= to) continue;
    const { units, scale } = storedAmount(item);
    const sum = sums.get(item.currency) ?? { units: 0n, scale: AMOUNT_SCALE, count: 0 };
    const target = Math.max(sum.scale, scale);
    sum.units = sum.units * 10n ** BigInt(target - sum.scale) + BigInt(units) * 10n ** BigInt(target - scale);
    sum.scale = target;
    sum.count += 1;
    sums.set(item.currency, sum);
  }
  if (!sums.has(CURRENCY)) sums.set(CURRENCY, { units: 0n, scale: AMOUNT_SCALE, count: 0 });
  return {
    totals: [...sums.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([currency, sum]) => {
      const decimal = unitsToDecimal(sum.units, sum.scale);
      return { currency, amount: Number(decimal), amount_decimal: decimal, amount_units: Number(sum.units), amount_scale: sum.scale, charges: sum.count };
    }),
    from: query.from ?? null,
    to: query.to ?? null,
  };
}

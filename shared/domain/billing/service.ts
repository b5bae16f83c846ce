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
  at: string;
}

/**
 * A charge to write inside the transaction that causes it (a purchase writes its number and its
 * charge together, so there is never one without the other), with its counter change.
 */
export function chargeWrite(orgId: string, input: ChargeInput) {
  const cents = Math.round(input.amount * 100);
  const charge: Charge = {
    id: uuidv7(),
    organization_id: orgId,
    amount: cents / 100,
    amount_cents: cents,
    currency: CURRENCY,
    reason: input.reason,
    description: input.description,
    resource_type: input.resourceType,
    resource_id: input.resourceId,
    ...(input.phoneNumber ? { phone_number: input.phoneNumber } : {}),
    created_at: input.at,
  };
  const counter: CounterDelta = { orgId, collection: collections.charges, delta: 1 };
  return { charge, item: putNew({ ...keys.charge(orgId, charge.id), entity: ENTITY, ...charge }), counter };
}

export function listCharges(orgId: string, query: PageRequest) {
  return listCollection(orgId, Prefix.charge, collections.charges, query, (item: ChargeItem) => stripKeys(item) as Charge);
}

/**
 * Phone numbers a test owns. Every integration test file shares one DynamoDB Local table, and so
 * the simulated carrier's pool (40 numbers an area): a number listed a moment ago may be sold to
 * another file in parallel, and an area can run dry. A test that only needs a number to call from
 * (or to be called on) imports one nobody else holds; a test about buying buys with `buyFromPool`.
 *
 * Who buys from which area of the pool (keep it so when adding a buyer): phone-numbers.test.ts takes
 * the first numbers listed, so its areas are its own (US 212, 213, 305, 312, 404, 415, 512, 617);
 * calls, billing-precision, inbound-calls and sweep-markers share US 206 through `buyFromPool`;
 * billing-renewals has US 720; voice-calls has CA 604.
 */
import { tryNormalizeE164 } from '../../shared/domain/common/phone';
import { BuyBody, ImportBody } from '../../shared/domain/phone-numbers/schemas';
import { buyPhoneNumber, importPhoneNumber, listAvailablePhoneNumbers } from '../../shared/domain/phone-numbers/service';
import { ConflictError, UnprocessableError } from '../../shared/errors';

/** A random valid number under `prefix` (country code and area, e.g. `+1415`): no other test holds it. */
export function uniquePhone(prefix = '+1415'): string {
  for (;;) {
    const number = tryNormalizeE164(`${prefix}${Math.floor(2_000_000 + Math.random() * 7_000_000)}`);
    if (number) return number;
  }
}

/** Imports a fresh number into `org` (as POST /phone-numbers/import does). */
export function ownNumber(org: string, extra: { inbound_agent_id?: string; prefix?: string } = {}) {
  const { prefix, ...rest } = extra;
  return importPhoneNumber(org, ImportBody.parse({ phone: uniquePhone(prefix), type: 'pstn', ...rest }));
}

type Wrap = <T>(work: () => Promise<T>) => Promise<T>;

/**
 * Buys a number of the simulated pool's `area` (the simulated carrier must be the one configured):
 * every number the area lists is tried, in random order, until one sells; the area is listed again
 * while numbers remain, so only a pool really sold out fails, and says so.
 */
export async function buyFromPool(org: string, area: string, o: { country?: string; extra?: Record<string, unknown>; wrap?: Wrap } = {}) {
  const wrap: Wrap = o.wrap ?? ((work) => work());
  for (let round = 1; round <= 5; round++) {
    const { items } = await listAvailablePhoneNumbers(org, { country: o.country ?? 'US', area_code: area, limit: 100 });
    if (!items.length) break;
    for (const choice of [...items].sort(() => Math.random() - 0.5)) {
      try {
        const number = await wrap(() => buyPhoneNumber(org, BuyBody.parse({ phone_number: choice.phone_number, price: choice.price, ...o.extra })));
        return { number, choice };
      } catch (err) {
        // Sold to another file between the listing and the purchase: try the next one.
        const sold = err instanceof ConflictError || (err instanceof UnprocessableError && /not available/.test(err.message));
        if (!sold) throw err;
      }
    }
  }
  throw new Error(`the simulated pool's area ${area} is sold out: the integration files together buy more than its 40 numbers`);
}

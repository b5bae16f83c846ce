import { v7 as uuidv7 } from 'uuid';
import { clockMs } from '../../clock';
import { keys } from '../../db/keys';
import { ConditionFailed, deleteExisting, putNew, queryAll, transact } from '../../db/store';
import { UnavailableError, UnprocessableError } from '../../errors';
import { seededRandom } from '../seeded-random';
import { phoneRules } from '../../domain/common/phone-field';
import { parseCallStatusFields } from './status-event';
import type {
  AvailableNumber,
  CallStatus,
  CallStatusEvent,
  NumberCapabilities,
  PlaceCallInput,
  PlacedCall,
  PurchasedNumber,
  SearchQuery,
  TelephonyPort,
} from './port';

/**
 * The simulated carrier: the local runtime's default and what tests run against.
 *
 * Inventory: a fixed catalogue of countries and area codes; each area holds 40 numbers drawn
 * from a PRNG seeded by the country and area code, kept only when libphonenumber-js (full
 * metadata) says the number is valid for its country. Same input, same numbers, every time.
 *
 * Pool state: the carrier's own "sold" markers live in the table (`SIMCARRIER#<country>`,
 * sort key the E.164 number), never in memory, so every Lambda and process sees one pool. A
 * purchase is a conditional put of the marker, so two racing buyers of one number cannot both
 * get it, as with a real carrier; a release deletes the marker and the number is offered again.
 *
 * Failures for tests (SIMULATED_CARRIER_FAIL, comma-separated, read on every call):
 * `search`, `purchase`, `release`, `call` make that operation fail as an unavailable carrier
 * (503); `purchase:+E164` makes the carrier refuse to sell that one number (422).
 */

interface Area {
  code: string;
  locality: string;
  region: string;
  /** National significant digits that follow the area code. */
  subscriberDigits: number;
  /** Allowed first subscriber digits. */
  firstDigits: string;
}

interface Country {
  callingCode: string;
  price: number;
  inbound: number;
  outbound: number;
  capabilities: NumberCapabilities;
  nanp: boolean;
  areas: Area[];
}

const nanp = (code: string, locality: string, region: string): Area => ({ code, locality, region, subscriberDigits: 7, firstDigits: '23456789' });
const area = (code: string, locality: string, region: string, subscriberDigits: number, firstDigits = '23456789'): Area => ({
  code, locality, region, subscriberDigits, firstDigits,
});

/** The catalogue. Prices are USD, monthly and per minute, modelled on public carrier list prices. */
export const SIMULATED_CATALOGUE: Record<string, Country> = {
  US: {
    callingCode: '1', price: 1.15, inbound: 0.0085, outbound: 0.014, nanp: true,
    capabilities: { voice: true, sms: true, mms: true },
    areas: [
      nanp('415', 'San Francisco', 'CA'), nanp('212', 'New York', 'NY'), nanp('312', 'Chicago', 'IL'),
      nanp('512', 'Austin', 'TX'), nanp('206', 'Seattle', 'WA'), nanp('305', 'Miami', 'FL'),
      nanp('617', 'Boston', 'MA'), nanp('213', 'Los Angeles', 'CA'), nanp('404', 'Atlanta', 'GA'),
      nanp('720', 'Denver', 'CO'),
    ],
  },
  CA: {
    callingCode: '1', price: 1.15, inbound: 0.0085, outbound: 0.014, nanp: true,
    capabilities: { voice: true, sms: true, mms: false },
    areas: [nanp('416', 'Toronto', 'ON'), nanp('604', 'Vancouver', 'BC'), nanp('514', 'Montreal', 'QC'), nanp('403', 'Calgary', 'AB')],
  },
  GB: {
    callingCode: '44', price: 1.25, inbound: 0.01, outbound: 0.0158, nanp: false,
    capabilities: { voice: true, sms: false, mms: false },
    areas: [area('20', 'London', 'England', 8, '378'), area('161', 'Manchester', 'England', 7), area('131', 'Edinburgh', 'Scotland', 7)],
  },
  DE: {
    callingCode: '49', price: 1.5, inbound: 0.01, outbound: 0.0204, nanp: false,
    capabilities: { voice: true, sms: false, mms: false },
    areas: [area('30', 'Berlin', 'Berlin', 8), area('89', 'Munich', 'Bavaria', 8), area('40', 'Hamburg', 'Hamburg', 8)],
  },
};

const NUMBERS_PER_AREA = 40;

/** NANP exchanges that are never assigned to subscribers (N11, 555, 950, 958, 959, 976). */
const badExchange = (nxx: string) => nxx[1] === '1' && nxx[2] === '1' || ['555', '950', '958', '959', '976'].includes(nxx);

const inventory = new Map<string, AvailableNumber[]>();

/** The whole deterministic inventory of one area, sorted. */
export async function areaInventory(countryCode: string, areaCode: string): Promise<AvailableNumber[]> {
  const id = `${countryCode}:${areaCode}`;
  const cached = inventory.get(id);
  if (cached) return cached;
  const country = SIMULATED_CATALOGUE[countryCode];
  const spec = country?.areas.find((a) => a.code === areaCode);
  if (!country || !spec) return [];
  const rules = await phoneRules();
  const next = seededRandom(id);
  const digit = () => String(Math.floor(next() * 10));
  const numbers = new Set<string>();
  for (let attempt = 0; numbers.size < NUMBERS_PER_AREA && attempt < NUMBERS_PER_AREA * 50; attempt++) {
    let subscriber = spec.firstDigits[Math.floor(next() * spec.firstDigits.length)];
    while (subscriber.length < spec.subscriberDigits) subscriber += digit();
    if (country.nanp && badExchange(subscriber.slice(0, 3))) continue;
    const e164 = `+${country.callingCode}${spec.code}${subscriber}`;
    if (rules.tryNormalizeE164(e164)) numbers.add(e164);
  }
  const list = [...numbers].sort().map((phone_number) => ({
    phone_number,
    country: countryCode,
    locality: spec.locality,
    region: spec.region,
    price: country.price,
    per_minute_price_inbound: country.inbound,
    per_minute_price_outbound: country.outbound,
    capabilities: { ...country.capabilities },
  }));
  inventory.set(id, list);
  return list;
}

/** Which catalogue entry a number belongs to, if any. */
function locate(e164: string): { country: string; area: string } | undefined {
  for (const [country, spec] of Object.entries(SIMULATED_CATALOGUE)) {
    for (const a of spec.areas) {
      const prefix = `+${spec.callingCode}${a.code}`;
      if (e164.startsWith(prefix) && e164.length === prefix.length + a.subscriberDigits) return { country, area: a.code };
    }
  }
  return undefined;
}

function failures(): string[] {
  return (process.env.SIMULATED_CARRIER_FAIL ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

function failIf(operation: string): void {
  if (failures().includes(operation)) {
    throw new UnavailableError('The telephony carrier is unavailable; retry later', { provider: 'simulated', operation });
  }
}

async function soldNumbers(country: string, prefix: string): Promise<Set<string>> {
  const sold = new Set<string>();
  const q = { pkName: 'pk', pkValue: keys.simulatedCarrierPool(country), skName: 'sk', skPrefix: prefix };
  for await (const item of queryAll<{ sk: string }>(q, ['sk'], true)) sold.add(item.sk);
  return sold;
}

/** What the last digit of `to` does (operations.md, "Test numbers of the simulated carrier"). */
const CALL_OUTCOMES: Record<string, { status: CallStatus; answeredBy?: string }> = {
  '6': { status: 'completed', answeredBy: 'machine_end_beep' },
  '7': { status: 'no-answer' },
  '8': { status: 'busy' },
  '9': { status: 'failed' },
};

/** An answered call rings this long first. */
export const SIMULATED_RING_SECONDS = 1;
/** Voicemail, busy and failed end this long after dialing. */
export const SIMULATED_QUICK_END_SECONDS = 2;

/** SIMULATED_CALL_SECONDS (default 3): how long an answered simulated call lasts, in real seconds. */
export function simulatedCallSeconds(): number {
  const raw = process.env.SIMULATED_CALL_SECONDS;
  const n = raw ? Number(raw) : 3;
  if (!Number.isInteger(n) || n < 1 || n > 600) throw new Error(`SIMULATED_CALL_SECONDS must be a whole number from 1 to 600, got "${raw}".`);
  return n;
}

type SimulatedOutcome = { status: CallStatus; answeredBy?: string; durationSec: number };

/**
 * SIMULATED_CALL_RANDOM_SEED: when set (any text), the carrier ignores the test digits and draws each
 * call's outcome and length at random, reproducibly: the n-th call this process places to a number
 * draws from a generator seeded by (seed, number, n). Answered by a person 55% (talking 30–300 s),
 * rings out 20%, busy 10%, voicemail 10%, carrier failure 5%. `npm run simulate` runs this way.
 */
export function simulatedRandomSeed(): string | undefined {
  return process.env.SIMULATED_CALL_RANDOM_SEED || undefined;
}

const callsPlacedTo = new Map<string, number>();

function randomOutcome(seed: string, to: string): SimulatedOutcome {
  const n = (callsPlacedTo.get(to) ?? 0) + 1;
  callsPlacedTo.set(to, n);
  const next = seededRandom(`${seed}:${to}:${n}`);
  const r = next();
  if (r < 0.55) return { status: 'completed', answeredBy: 'human', durationSec: 30 + Math.floor(next() * 271) };
  if (r < 0.75) return { ...CALL_OUTCOMES['7']!, durationSec: 0 };
  if (r < 0.85) return { ...CALL_OUTCOMES['8']!, durationSec: 0 };
  if (r < 0.95) return { ...CALL_OUTCOMES['6']!, durationSec: 0 };
  return { ...CALL_OUTCOMES['9']!, durationSec: 0 };
}

/**
 * What a simulated call does, by the callee's last digit: 0–5 answered and `completed` after
 * SIMULATED_CALL_SECONDS; 6 voicemail (a machine answers; no conversation); 7 rings out
 * (`no-answer`) after `ringSeconds`; 8 busy; 9 the carrier fails. With SIMULATED_CALL_RANDOM_SEED,
 * drawn at random instead.
 */
export function simulatedCallOutcome(to: string): SimulatedOutcome {
  const seed = simulatedRandomSeed();
  if (seed) return randomOutcome(seed, to);
  const outcome = CALL_OUTCOMES[to.slice(-1)];
  if (outcome) return { ...outcome, durationSec: 0 };
  return { status: 'completed', answeredBy: 'human', durationSec: simulatedCallSeconds() };
}

/**
 * The whole course of a simulated call as carrier status events, offsets from dialing: the
 * same events (and fields) a real carrier posts to its status callback.
 */
export function simulatedCourse(providerCallId: string, to: string, ringSeconds: number, start = clockMs()): CallStatusEvent[] {
  const { status, answeredBy, durationSec } = simulatedCallOutcome(to);
  const at = (seconds: number) => new Date(start + seconds * 1000).toISOString();
  const events: CallStatusEvent[] = [
    { providerCallId, status: 'queued', at: at(0) },
    { providerCallId, status: 'ringing', at: at(0) },
  ];
  if (status === 'completed' && answeredBy === 'human') {
    events.push({ providerCallId, status: 'in-progress', answeredBy, at: at(SIMULATED_RING_SECONDS) });
    events.push({ providerCallId, status: 'completed', answeredBy, durationSec, at: at(SIMULATED_RING_SECONDS + durationSec) });
  } else {
    const endsAfter = status === 'no-answer' ? Math.max(1, Math.round(ringSeconds)) : SIMULATED_QUICK_END_SECONDS;
    events.push({ providerCallId, status, durationSec: 0, ...(answeredBy ? { answeredBy } : {}), at: at(endsAfter) });
  }
  return events;
}

/** Calls the simulated carrier was asked to place in this process: the fault tier's count of side effects (one per dialed call). */
let dials = 0;
export const simulatedDials = () => dials;

export function simulatedCarrier(): TelephonyPort {
  return {
    name: 'simulated',

    async searchAvailable(query: SearchQuery) {
      failIf('search');
      const country = SIMULATED_CATALOGUE[query.country];
      if (!country) return [];
      const areas = country.areas.filter((a) => !query.areaCode || a.code === query.areaCode);
      if (!areas.length) return [];
      const prefix = `+${country.callingCode}${query.areaCode ?? ''}`;
      const sold = await soldNumbers(query.country, prefix);
      const out: AvailableNumber[] = [];
      for (const a of areas) {
        for (const n of await areaInventory(query.country, a.code)) {
          if (out.length >= query.limit) return out;
          const national = n.phone_number.slice(country.callingCode.length + 1);
          if (sold.has(n.phone_number) || (query.contains && !national.includes(query.contains))) continue;
          out.push(n);
        }
      }
      return out;
    },

    async quote(phoneNumber) {
      const where = locate(phoneNumber);
      if (!where) return undefined;
      const listed = (await areaInventory(where.country, where.area)).find((n) => n.phone_number === phoneNumber);
      if (!listed) return undefined;
      const sold = await soldNumbers(where.country, phoneNumber);
      return sold.has(phoneNumber) ? undefined : listed;
    },

    async purchase(phoneNumber): Promise<PurchasedNumber> {
      failIf('purchase');
      if (failures().includes(`purchase:${phoneNumber}`)) {
        throw new UnprocessableError('The carrier refused to sell this number', { phone_number: phoneNumber, provider: 'simulated' });
      }
      const where = locate(phoneNumber);
      if (!where || !(await areaInventory(where.country, where.area)).some((n) => n.phone_number === phoneNumber)) {
        throw new UnprocessableError('The number is not available', { phone_number: phoneNumber });
      }
      const providerRef = `SIM${uuidv7().replace(/-/g, '')}`;
      try {
        await transact([putNew({ ...keys.simulatedCarrierNumber(where.country, phoneNumber), entity: 'SIMCARRIER_NUMBER', provider_ref: providerRef, sold_at: new Date().toISOString() })]);
      } catch (err) {
        if (err instanceof ConditionFailed) throw new UnprocessableError('The number is not available', { phone_number: phoneNumber });
        throw err;
      }
      return { phoneNumber, providerRef };
    },

    async release(number) {
      failIf('release');
      const where = locate(number.phoneNumber);
      if (!where) return;
      try {
        await transact([deleteExisting(keys.simulatedCarrierNumber(where.country, number.phoneNumber), '#ref = :ref', { ':ref': number.providerRef }, { '#ref': 'provider_ref' })]);
      } catch (err) {
        // Already back in the pool (a retried release): nothing to do.
        if (!(err instanceof ConditionFailed)) throw err;
      }
    },

    async placeCall(input: PlaceCallInput): Promise<PlacedCall> {
      failIf('call');
      dials++;
      const providerCallId = `SIMCA${uuidv7().replace(/-/g, '')}`;
      return { providerCallId, status: 'queued', events: simulatedCourse(providerCallId, input.to, input.timeoutSeconds ?? 30) };
    },

    courseOf: simulatedCourse,

    parseStatusEvent: parseCallStatusFields,
  };
}

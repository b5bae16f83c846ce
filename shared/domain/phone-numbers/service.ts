import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { v7 as uuidv7 } from 'uuid';
import { telephony } from '../../adapters/telephony';
import type { PurchasedNumber } from '../../adapters/telephony/port';
import { secrets } from '../../adapters/secrets';
import { collections, gsi1, keys, Prefix } from '../../db/keys';
import {
  ConditionFailed,
  deleteExisting,
  getItem,
  putNew,
  queryPage,
  readCounter,
  stripKeys,
  transact,
  updateExisting,
  type PageRequest,
} from '../../db/store';
import { ConflictError, NotFoundError, UnprocessableError, type FieldIssue } from '../../errors';
import { listResult } from '../common/list-result';
import { logger } from '../../logger';
import { config } from '../../config';
import { RENEWAL_ATTRIBUTES, renewalSchedule } from '../billing/renewals';
import { chargeWrite } from '../billing/service';
import { getOr404, requireSomeField } from '../common/collection';
import type { PhoneNumberItem } from './model';
import { DEFAULT_INBOUND_WEBHOOK_TIMEOUT_MS, inboundWebhookChange, type InboundWebhookChange } from './inbound-webhook';
import { hasOverflowInput, overflowChange, overflowOf, type OverflowChange, type OverflowInput } from './overflow';
import { references } from '../references';
import type {
  BuyInput,
  ImportInput,
  PhoneNumber,
  PhoneNumberSource,
  PhoneNumberStatus,
  UpdateImportInput,
  UpdatePhoneNumberInput,
} from './schemas';

/**
 * Phone numbers an organization holds: bought from the carrier or imported (a SIP trunk or a
 * PSTN number held elsewhere).
 *
 * - One holder per number: every held number has a global claim item `NUMBER#<e164>` put with
 *   attribute_not_exists in the same transaction as the organization's `PHONE#<id>` item (and,
 *   for a purchase, its charge). Racing buys or imports of one number leave one holder.
 * - Release keeps the item with status `released` (it stays listed, filterable by `status`),
 *   deletes the claim and gives a bought number back to the carrier.
 * - `in_use` on the number item counts the running campaigns that dial from it; a campaign
 *   engine is to raise it (`ADD in_use 1`, conditioned on status `active`) in the transaction that
 *   starts a campaign and lower it when the campaign stops; a release is conditioned on it being
 *   0, so a number in use cannot be released (409).
 * - A bought number pays its first month with the purchase and then carries `next_renewal_at` and
 *   an entry in the due-renewals index (see ../billing/renewals.ts); release removes both in its
 *   transaction, so billing stops. Imported numbers are never billed.
 * - `sip_password` is sealed with the secrets box (KMS envelope encryption deployed, a local
 *   key locally) before it is written, and opened only to answer the caller.
 */

interface ClaimItem {
  organization_id: string;
  phone_number_id: string;
}

const ENTITY = 'PHONE_NUMBER';

const cents = (n: number) => Math.round(n * 100);
const tenThousandths = (n: number) => Math.round(n * 10_000);

async function view(item: PhoneNumberItem, webhookSecret?: string): Promise<PhoneNumber> {
  const { sip_password_sealed, provider, provider_ref, in_use, carrier_released_at, periods_billed, inbound_webhook_secret_sealed, ...stored } = stripKeys(item as unknown as Record<string, unknown>) as unknown as PhoneNumberItem;
  void provider; void provider_ref; void in_use; void carrier_released_at; void periods_billed; void inbound_webhook_secret_sealed;
  // The webhook's URL and timeout are shown (null without one); its secret only by the write that made it.
  const url = stored.inbound_webhook_url ?? null;
  const rest = { ...stored, ...overflowOf(stored), inbound_webhook_url: url, inbound_webhook_timeout_ms: url ? (stored.inbound_webhook_timeout_ms ?? DEFAULT_INBOUND_WEBHOOK_TIMEOUT_MS) : null, ...(webhookSecret ? { inbound_webhook_secret: webhookSecret } : {}) };
  if (rest.source !== 'imported') return rest as PhoneNumber;
  return { ...rest, sip_password: sip_password_sealed ? await secrets().open(sip_password_sealed) : '' } as PhoneNumber;
}

const statusIndex = (orgId: string, id: string, status: PhoneNumberStatus) => ({ gsi1pk: gsi1.byStatus(orgId, ENTITY, status), gsi1sk: id });

function claimWrite(phoneNumber: string, orgId: string, id: string, source: PhoneNumberSource, at: string) {
  return putNew({ ...keys.numberClaim(phoneNumber), entity: 'NUMBER_CLAIM', phone_number: phoneNumber, organization_id: orgId, phone_number_id: id, source, claimed_at: at });
}

const newNumberCounters = (orgId: string) => [
  { orgId, collection: collections.phoneNumbers, delta: 1 },
  { orgId, collection: collections.phoneNumbersByStatus('active'), delta: 1 },
];

/** Writes a new number (claim + item + extras) and retries transaction conflicts; a claim held by another number is a 409. */
async function writeNewNumber(
  item: PhoneNumberItem,
  extra: { items?: Parameters<typeof transact>[0]; counters?: Parameters<typeof transact>[1]; guards?: Parameters<typeof transact>[2] } = {},
): Promise<void> {
  const orgId = item.organization_id;
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact(
        [claimWrite(item.phone_number, orgId, item.id, item.source, item.created_at), putNew(item as unknown as Record<string, unknown>), ...(extra.items ?? [])],
        [...newNumberCounters(orgId), ...(extra.counters ?? [])],
        extra.guards,
      );
      return;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      const claim = await getItem<ClaimItem>(keys.numberClaim(item.phone_number));
      if (claim && claim.phone_number_id !== item.id) {
        throw new ConflictError(`The number ${item.phone_number} is already held`, { phone_number: item.phone_number });
      }
      await pause(attempt);
    }
  }
  throw new ConflictError('Too many concurrent changes to the organization\'s phone numbers; retry', {});
}

export async function listAvailablePhoneNumbers(_orgId: string, query: { country: string; area_code?: string; contains?: string; limit: number }) {
  const items = await telephony().searchAvailable({ country: query.country, areaCode: query.area_code, contains: query.contains, limit: query.limit });
  return listResult({ items, nextCursor: null }, items.length, { limit: query.limit, offset: 0 });
}

/**
 * Buys a number: it must be listed now and at the price given (422 otherwise). The carrier
 * sells it to one buyer only; then the number, its claim and the charge are written in one
 * transaction, so the account is charged exactly when it holds the number. Should that write
 * fail, the number goes back to the carrier. A repeat with the same Idempotency-Key replays the
 * first answer (middleware) and a second buyer finds the number sold, so nothing is charged twice.
 */
export async function buyPhoneNumber(orgId: string, input: BuyInput): Promise<PhoneNumber> {
  const carrier = telephony();
  const listing = await carrier.quote(input.phone_number);
  if (!listing) throw new UnprocessableError(`The number ${input.phone_number} is not available`, { phone_number: input.phone_number });
  const mismatched = [
    cents(input.price) !== cents(listing.price) ? 'price' : undefined,
    input.per_minute_price_inbound !== undefined && tenThousandths(input.per_minute_price_inbound) !== tenThousandths(listing.per_minute_price_inbound) ? 'per_minute_price_inbound' : undefined,
    input.per_minute_price_outbound !== undefined && tenThousandths(input.per_minute_price_outbound) !== tenThousandths(listing.per_minute_price_outbound) ? 'per_minute_price_outbound' : undefined,
  ].filter((field): field is 'price' | 'per_minute_price_inbound' | 'per_minute_price_outbound' => field !== undefined);
  if (mismatched.length) {
    throw new UnprocessableError(`The ${mismatched.join(', ')} does not match the listing`, {
      fields: mismatched.map((path): FieldIssue => ({ path, message: `does not match the listed ${listing[path]}` })),
      listed: { price: listing.price, per_minute_price_inbound: listing.per_minute_price_inbound, per_minute_price_outbound: listing.per_minute_price_outbound },
    });
  }

  // Checked before buying (nothing is bought for a wrong agent or webhook) and again in the write's transaction.
  const agentGuards = await inboundAgentGuards(orgId, input.inbound_agent_id);
  const webhook = await inboundWebhookChange(input);
  const overflow = overflowChange(input, input.phone_number);
  const purchased = await carrier.purchase(input.phone_number, inboundUrls(carrier.name));
  const now = new Date().toISOString();
  const id = uuidv7();
  const item: PhoneNumberItem = {
    ...newNumberItem(orgId, id, 'purchased', input.phone_number, now),
    inbound_agent_id: input.inbound_agent_id ?? null,
    name: input.phone_number,
    price: listing.price,
    per_minute_price_inbound: listing.per_minute_price_inbound,
    per_minute_price_outbound: listing.per_minute_price_outbound,
    country: listing.country,
    locality: listing.locality,
    region: listing.region,
    capabilities: listing.capabilities,
    purchased_at: now,
    // The purchase pays the first month; the renewal job charges the next ones.
    ...renewalSchedule(orgId, id, now, 1),
    provider: carrier.name,
    provider_ref: purchased.providerRef,
    ...webhook.set,
    ...overflow.set,
  };
  const charge = chargeWrite(orgId, {
    amount: listing.price,
    reason: 'number_purchase',
    description: `Purchase of ${input.phone_number} (first month)`,
    resourceType: 'phone_number',
    resourceId: id,
    phoneNumber: input.phone_number,
    period: { start: now, end: item.next_renewal_at! },
    at: now,
  });
  try {
    await writeNewNumber(item, { items: [charge.item], counters: [charge.counter], guards: agentGuards });
  } catch (err) {
    await giveBack(purchased);
    throw err;
  }
  return view(item, webhook.secret);
}

/** Compensation: a number bought at the carrier that we could not record goes back. */
async function giveBack(purchased: PurchasedNumber): Promise<void> {
  try {
    await telephony().release(purchased);
  } catch (err) {
    logger.error('A purchased number could not be given back to the carrier; release it by hand', { phone_number: purchased.phoneNumber, provider_ref: purchased.providerRef, error: err as Error });
  }
}

/** What every new number item starts with, bought or imported: keys, status index, an active idle number. */
function newNumberItem(orgId: string, id: string, source: 'purchased' | 'imported', phone: string, now: string) {
  return {
    ...keys.phoneNumber(orgId, id),
    entity: ENTITY,
    version: 1,
    ...statusIndex(orgId, id, 'active'),
    id,
    organization_id: orgId,
    source,
    phone_number: phone,
    status: 'active' as const,
    inbound_agent_id: null,
    in_use: 0,
    created_at: now,
    updated_at: now,
    released_at: null,
  };
}

/**
 * The webhooks a bought number's incoming calls go to, for carriers that call back over HTTP
 * (Twilio) when PUBLIC_BASE_URL is set; none otherwise: the voice URL (the call's instructions)
 * and the status callback (the call's end, with the carrier's duration; Twilio sends none for an
 * incoming call without it).
 */
function inboundUrls(carrier: string): { voiceUrl?: string; statusCallbackUrl?: string } {
  const base = config().publicBaseUrl?.replace(/\/$/, '');
  if (carrier !== 'twilio' || !base) return {};
  return { voiceUrl: `${base}/api/v1/telephony/twilio/inbound`, statusCallbackUrl: `${base}/api/v1/telephony/twilio/status` };
}

/** The guard that `inbound_agent_id` names an agent of the organization (400 naming the field), checked now and in the write. */
async function inboundAgentGuards(orgId: string, agentId: string | null | undefined) {
  if (!agentId) return [];
  if (!(await getItem(keys.agent(orgId, agentId)))) throw references.agent(orgId, agentId, 'inbound_agent_id').onFail();
  return [references.agent(orgId, agentId, 'inbound_agent_id')];
}

/**
 * Imports a number held elsewhere. Its carrier is not ours to configure: to have its calls
 * answered by `inbound_agent_id`, the operator points the number's voice URL (Twilio) at
 * POST /api/v1/telephony/twilio/inbound (docs/api.md, inbound calls).
 */
export async function importPhoneNumber(orgId: string, input: ImportInput): Promise<PhoneNumber> {
  const agentGuards = await inboundAgentGuards(orgId, input.inbound_agent_id);
  const webhook = await inboundWebhookChange(input);
  const overflow = overflowChange(input, input.phone);
  const now = new Date().toISOString();
  const id = uuidv7();
  const item: PhoneNumberItem = {
    ...newNumberItem(orgId, id, 'imported', input.phone, now),
    ...overflow.set,
    inbound_agent_id: input.inbound_agent_id ?? null,
    phone: input.phone,
    type: input.type,
    name: input.name || input.phone,
    termination_uri: input.termination_uri ?? '',
    sip_username: input.sip_username ?? '',
    ...(input.sip_password ? { sip_password_sealed: await secrets().seal(input.sip_password) } : {}),
    released_at: null,
    ...webhook.set,
  };
  await writeNewNumber(item, { guards: agentGuards });
  return view(item, webhook.secret);
}

export async function getPhoneNumber(orgId: string, id: string): Promise<PhoneNumber> {
  return view(await getOr404<PhoneNumberItem>(keys.phoneNumber(orgId, id), 'Phone number', id));
}

export async function listPhoneNumbers(orgId: string, query: PageRequest & { status?: PhoneNumberStatus }) {
  const [page, total] = await Promise.all([
    query.status
      ? queryPage<PhoneNumberItem>({ index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.byStatus(orgId, ENTITY, query.status), skName: 'gsi1sk' }, query)
      : queryPage<PhoneNumberItem>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.phoneNumber }, query),
    readCounter(orgId, query.status ? collections.phoneNumbersByStatus(query.status) : collections.phoneNumbers),
  ]);
  return listResult({ items: await Promise.all(page.items.map((item) => view(item))), nextCursor: page.nextCursor }, total, query);
}

/** Why a conditional write on an active number failed: gone (404), or released (409). */
async function explainFailedUpdate(orgId: string, id: string, resource: string, expectSource?: PhoneNumberSource): Promise<never> {
  const item = await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, id));
  if (!item || (expectSource && item.source !== expectSource)) throw new NotFoundError(resource, id);
  if (item.status === 'released') throw new ConflictError('The phone number has been released and can no longer be changed', { id });
  throw new ConflictError('The phone number is being changed by other requests; retry', { id });
}

/** PUT of an imported number: replaces only the fields given; `sip_password` is sealed. */
export async function updateImportedPhoneNumber(orgId: string, id: string, input: UpdateImportInput): Promise<PhoneNumber> {
  requireSomeField(input);
  const { sip_password, inbound_webhook_url, inbound_webhook_timeout_ms, overflow: _o, overflow_phone_number: _p, overflow_queue_seconds: _q, overflow_hold_music_url: _h, ...plain } = input;
  const webhook = await webhookChangeOf(orgId, id, { inbound_webhook_url, inbound_webhook_timeout_ms });
  const overflow = await overflowChangeOf(orgId, id, input);
  const set: Record<string, unknown> = { ...plain, ...webhook.set, ...overflow.set, updated_at: new Date().toISOString() };
  if (sip_password !== undefined) set.sip_password_sealed = await secrets().seal(sip_password);
  const guards = input.inbound_agent_id ? [references.agent(orgId, input.inbound_agent_id, 'inbound_agent_id')] : [];
  try {
    await transact(
      [
        updateExisting(keys.phoneNumber(orgId, id), set, {
          remove: [...webhook.remove, ...overflow.remove],
          condition: `#src = :imported AND #st = :active${overflow.condition}`,
          names: { '#src': 'source', '#st': 'status', ...overflow.names },
          values: { ':imported': 'imported', ':active': 'active', ...overflow.values },
        }),
      ],
      [],
      guards,
    );
  } catch (err) {
    if (err instanceof ConditionFailed) return explainFailedUpdate(orgId, id, 'Imported phone number', 'imported');
    throw err;
  }
  return view(await getOr404<PhoneNumberItem>(keys.phoneNumber(orgId, id), 'Phone number', id), webhook.secret);
}

/**
 * The webhook change of an update: the number is read only when its webhook matters (a timeout
 * alone needs a URL already; a URL alone keeps the timeout); a number that is not there is left
 * to the write's 404.
 */
async function webhookChangeOf(orgId: string, id: string, input: Parameters<typeof inboundWebhookChange>[0]): Promise<InboundWebhookChange> {
  const url = input.inbound_webhook_url;
  const reads = (url === undefined) !== (input.inbound_webhook_timeout_ms === undefined) && url !== null;
  const current = reads ? await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, id)) : undefined;
  return inboundWebhookChange(input, current);
}

/**
 * The overflow change of an update, checked against the number as read (forward needs a number to
 * forward to, and not itself); the write is conditioned on the number unchanged since that read
 * (its `updated_at`), so two racing updates cannot leave `forward` without a number (the loser: 409).
 */
async function overflowChangeOf(orgId: string, id: string, input: OverflowInput): Promise<OverflowChange & { condition: string; names: Record<string, string>; values: Record<string, unknown> }> {
  const none = { set: {}, remove: [], condition: '', names: {}, values: {} };
  if (!hasOverflowInput(input)) return none;
  const current = await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, id));
  if (!current) return none; // the write's 404
  return { ...overflowChange(input, current.phone_number, current), condition: ' AND #upd = :read', names: { '#upd': 'updated_at' }, values: { ':read': current.updated_at } };
}

/** PATCH: `name`, and `inbound_agent_id` (an agent of the organization, checked in the same transaction, or null). */
export async function updatePhoneNumber(orgId: string, id: string, input: UpdatePhoneNumberInput): Promise<PhoneNumber> {
  requireSomeField(input);
  const { inbound_webhook_url, inbound_webhook_timeout_ms, overflow: _o, overflow_phone_number: _p, overflow_queue_seconds: _q, overflow_hold_music_url: _h, ...plain } = input;
  const webhook = await webhookChangeOf(orgId, id, { inbound_webhook_url, inbound_webhook_timeout_ms });
  const overflow = await overflowChangeOf(orgId, id, input);
  const guards = input.inbound_agent_id ? [references.agent(orgId, input.inbound_agent_id, 'inbound_agent_id')] : [];
  try {
    await transact(
      [
        updateExisting(keys.phoneNumber(orgId, id), { ...plain, ...webhook.set, ...overflow.set, updated_at: new Date().toISOString() }, {
          remove: [...webhook.remove, ...overflow.remove],
          condition: `#st = :active${overflow.condition}`,
          names: { '#st': 'status', ...overflow.names },
          values: { ':active': 'active', ...overflow.values },
        }),
      ],
      [],
      guards,
    );
  } catch (err) {
    if (err instanceof ConditionFailed) return explainFailedUpdate(orgId, id, 'Phone number');
    throw err;
  }
  return view(await getOr404<PhoneNumberItem>(keys.phoneNumber(orgId, id), 'Phone number', id), webhook.secret);
}

/**
 * Releases a number: status `released` (conditioned on `in_use` being 0, else 409), the claim
 * deleted and the active/released counters moved in one transaction; then a bought number goes
 * back to the carrier and billing stops. If the carrier cannot be reached the number is already
 * released here and the answer is 503; repeating the DELETE finishes the carrier side.
 */
export async function releasePhoneNumber(orgId: string, id: string): Promise<void> {
  const key = keys.phoneNumber(orgId, id);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await getItem<PhoneNumberItem>(key);
    if (!item) throw new NotFoundError('Phone number', id);
    if (item.status === 'released') {
      if (needsCarrierRelease(item)) return finishCarrierRelease(item);
      throw new ConflictError('The phone number is already released', { id });
    }
    if ((item.in_use ?? 0) > 0) throw new ConflictError('The phone number is used by a running campaign and cannot be released', { id, in_use: item.in_use });
    const now = new Date().toISOString();
    try {
      await transact(
        [
          // Leaving the due-renewals index in this same write is what stops billing.
          updateExisting(key, { status: 'released', released_at: now, updated_at: now, ...statusIndex(orgId, id, 'released') }, {
            remove: RENEWAL_ATTRIBUTES,
            condition: '#st = :active AND (attribute_not_exists(#use) OR #use <= :unused)',
            names: { '#st': 'status', '#use': 'in_use' },
            values: { ':active': 'active', ':unused': 0 },
          }),
          deleteExisting(keys.numberClaim(item.phone_number), '#nid = :id', { ':id': id }, { '#nid': 'phone_number_id' }),
        ],
        [
          { orgId, collection: collections.phoneNumbersByStatus('active'), delta: -1 },
          { orgId, collection: collections.phoneNumbersByStatus('released'), delta: 1 },
        ],
      );
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt); // moved or put in use meanwhile: read again and decide
      continue;
    }
    if (needsCarrierRelease(item)) await finishCarrierRelease(item);
    return;
  }
  throw new ConflictError('The phone number is being changed by other requests; retry', { id });
}

const needsCarrierRelease = (item: PhoneNumberItem) => item.source === 'purchased' && !item.carrier_released_at && !!item.provider_ref;

async function finishCarrierRelease(item: PhoneNumberItem): Promise<void> {
  await telephony().release({ phoneNumber: item.phone_number, providerRef: item.provider_ref! });
  await transact([updateExisting(keys.phoneNumber(item.organization_id, item.id), { carrier_released_at: new Date().toISOString() })]);
}


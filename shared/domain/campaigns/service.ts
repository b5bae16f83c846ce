import { v7 as uuidv7 } from 'uuid';
import { queue } from '../../adapters/queue';
import { clockMs, clockNow } from '../../clock';
import { collections, gsi2, keys, Prefix } from '../../db/keys';
import { ConditionFailed, deleteExisting, getItem, putNew, queryPage, readCounter, transact, type CounterDelta, type Guard, type PageRequest } from '../../db/store';
import { deletePartition, getMany, putMany } from '../../db/filtered-query';
import { updateWrite } from '../../db/update';
import { noteDue } from '../../db/sweep-marker';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { ConflictError, ValidationError } from '../../errors';
import { listResult } from '../common/list-result';
import { getOr404, listCollection, requireSomeField } from '../common/collection';
import { references } from '../references';
import { dispatchEvents, newEvent, type PlatformEvent } from '../events/publish';
import type { PhoneNumberItem } from '../phone-numbers/model';
import {
  ADD_LOCK_MS,
  activeIndex,
  CAMPAIGN_ENTITY,
  campaignContactId,
  campaignContactView,
  campaignSummaryView,
  campaignView,
  CONTACT_ENTITY,
  contactStatusIndex,
  dueIndex,
  emptyStats,
  recountContacts,
  statusIndex,
  type CampaignContactItem,
  type CampaignItem,
} from './model';
import {
  scheduleDefaults,
  type Campaign,
  type CampaignContactStatus,
  type CampaignStatus,
  type CreateCampaignInput,
  type Schedule,
  type ScheduleInput,
  type UpdateCampaignInput,
} from './schemas';
import { failPending } from './fail-pending';
import { isValidTimeZone } from '../scheduling/time';
import { versionExists } from '../agents/versions';
import type { ZoneSource } from './schemas';

/**
 * Campaigns: create, read, change, delete, and the state moves the API asks for (start, pause,
 * cancel). Every state move is one conditional write with its counters, its `in_use` change on
 * the number and its event; the engine (./engine.ts) does the dialing.
 */

/** Campaigns with more contacts than this are deleted or cancelled page by page in the cleanup job. */
export const INLINE_CLEANUP_LIMIT = 500;
/** BatchWriteItem requests in flight while contacts are added (measured in bench/campaigns.ts). */
const ADD_WRITE_PARALLEL = 16;

interface ContactRecord {
  id: string;
  first_name?: string;
  last_name?: string;
  email?: string;
  phone?: string;
  timezone?: string;
  tags?: string[];
}

const nowIso = () => clockNow().toISOString();

/** The campaign item, or 404 (another organization's id is simply not found). */
export async function getCampaignItem(orgId: string, id: string): Promise<CampaignItem> {
  return getOr404<CampaignItem>(keys.campaign(orgId, id), 'Campaign', id);
}

export async function getCampaign(orgId: string, id: string): Promise<Campaign> {
  return campaignView(await getCampaignItem(orgId, id));
}

export async function listCampaigns(orgId: string, query: PageRequest & { status?: CampaignStatus }) {
  if (!query.status) return listCollection(orgId, Prefix.campaign, collections.campaigns, query, campaignSummaryView);
  const [page, total] = await Promise.all([
    queryPage<CampaignItem>({ index: 'gsi1', pkName: 'gsi1pk', pkValue: statusIndex(orgId, '', query.status).gsi1pk, skName: 'gsi1sk' }, query),
    readCounter(orgId, collections.campaignsByStatus(query.status)),
  ]);
  return listResult({ items: page.items.map(campaignSummaryView), nextCursor: page.nextCursor }, total, query);
}

/** Schedule members merged over a base (defaults on create, the stored schedule on PATCH), checked as a whole. */
export function mergeSchedule(base: Schedule, input: ScheduleInput | undefined, path = 'schedule'): Schedule {
  const merged: Schedule = { ...base, ...input } as Schedule;
  merged.window_days = [...new Set(merged.window_days.map((d) => d % 7))].sort((a, b) => a - b);
  merged.blackout_dates = [...new Set(merged.blackout_dates)].sort();
  if (merged.window_end <= merged.window_start) {
    throw ValidationError.field(`${path}.window_end`, `must be after window_start (${merged.window_start}); overnight windows are not supported`);
  }
  return merged;
}

/** The agent and the number a campaign dials from, checked in the organization (400 naming them). */
async function checkLine(orgId: string, input: { agent_id?: string; phone_number_id: string; from_phone_number: string }) {
  const [agent, number] = await Promise.all([
    input.agent_id ? getItem(keys.agent(orgId, input.agent_id)) : Promise.resolve({}),
    getItem<PhoneNumberItem>(keys.phoneNumber(orgId, input.phone_number_id)),
  ]);
  const fields = [];
  if (!agent) fields.push({ path: 'agent_id', message: `agent ${input.agent_id} does not exist in this organization` });
  if (!number || number.status !== 'active') {
    fields.push({ path: 'phone_number_id', message: `phone number ${input.phone_number_id} does not exist in this organization${number ? ' (it was released)' : ''}` });
  } else if (number.phone_number !== input.from_phone_number) {
    fields.push({ path: 'from_phone_number', message: `must equal the number of phone_number_id (${number.phone_number})` });
  }
  if (fields.length) throw new ValidationError('The campaign refers to resources it cannot use', fields);
}

/** The number's `in_use` raised (start) or lowered (stop) in the state move's transaction. */
function numberInUse(orgId: string, numberId: string, delta: 1 | -1) {
  return updateWrite(keys.phoneNumber(orgId, numberId), {
    add: { in_use: delta },
    ...(delta > 0 ? { condition: '#st = :active', names: { '#st': 'status' }, values: { ':active': 'active' } } : {}),
  });
}

/**
 * Reads the listed contacts (BatchGetItem, 100 a request, in parallel); unknown ids are a 400
 * naming them. Duplicates in the list count once.
 */
async function loadContacts(orgId: string, ids: string[], path: string): Promise<ContactRecord[]> {
  const unique = [...new Set(ids)];
  const found = await getMany<ContactRecord>(unique.map((id) => keys.contact(orgId, id)), {
    parallel: 8,
    projection: ['id', 'first_name', 'last_name', 'email', 'phone', 'timezone', 'tags'],
  });
  if (found.length !== unique.length) {
    const have = new Set(found.map((c) => c.id));
    const missing = unique.filter((id) => !have.has(id));
    throw new ValidationError(
      `${missing.length} contact(s) do not exist in this organization`,
      missing.slice(0, 50).map((id) => ({ path: `${path}[${ids.indexOf(id)}]`, message: `contact ${id} does not exist in this organization` })),
      { missing_contact_ids: missing.slice(0, 1000) },
    );
  }
  return found;
}

/**
 * The zone each contact's window is read in when the campaign uses contact time zones, and
 * where it comes from: the contact's own valid `timezone` (`contact`); else the one zone of its
 * number (`phone_number`, libphonenumber's data: ./contact-zone.ts, loaded only when a contact
 * has no zone); else none, so the campaign's zone applies (`campaign`: no number, or a number
 * whose country spans several zones without an answer for its area code).
 */
async function contactZones(contacts: ContactRecord[]): Promise<Map<string, { timezone: string; timezone_source: ZoneSource }>> {
  const out = new Map<string, { timezone: string; timezone_source: ZoneSource }>();
  let zoneOfNumber: ((e164: string) => string | null) | undefined;
  for (const c of contacts) {
    if (c.timezone && isValidTimeZone(c.timezone)) {
      out.set(c.id, { timezone: c.timezone, timezone_source: 'contact' });
      continue;
    }
    if (c.phone) zoneOfNumber ??= (await import('./contact-zone')).zoneOfNumber;
    const inferred = c.phone ? zoneOfNumber!(c.phone) : null;
    out.set(c.id, inferred ? { timezone: inferred, timezone_source: 'phone_number' } : { timezone: '', timezone_source: 'campaign' });
  }
  return out;
}

/**
 * Writes campaign contacts for `contacts` not already in the campaign: one item per contact and
 * nothing else (BatchWriteItem of 25, 16 requests in flight). A number that comes twice in one
 * request is marked a duplicate here, in memory (the first one keeps it); a number already
 * brought in by an earlier request is caught when it is dialed, by the number's marker that the
 * claim writes in its transaction (./engine.ts). A new campaign has nothing to look up, so
 * `existing: false` skips the read of ids already present. The caller counts what it returns in
 * the campaign's `contact_stats`.
 */
async function writeCampaignContacts(orgId: string, campaignId: string, contacts: ContactRecord[], at: string, existing: boolean): Promise<number> {
  const ids = contacts.map((c) => campaignContactId(campaignId, c.id));
  const present = existing
    ? new Set((await getMany<{ id: string }>(ids.map((id) => keys.campaignContact(orgId, campaignId, id)), { parallel: 8, projection: ['id'] })).map((c) => c.id))
    : new Set<string>();
  const fresh = contacts.filter((_, i) => !present.has(ids[i]!));
  const zones = await contactZones(fresh);
  const owners = new Map<string, string>();
  const items: Record<string, unknown>[] = [];
  for (const c of fresh) {
    const id = campaignContactId(campaignId, c.id);
    const phone = c.phone ?? '';
    const owner = phone ? owners.get(phone) : undefined;
    if (phone && !owner) owners.set(phone, id);
    const item: CampaignContactItem = {
      ...keys.campaignContact(orgId, campaignId, id),
      entity: CONTACT_ENTITY,
      id,
      campaign_id: campaignId,
      contact_id: c.id,
      name: [c.first_name, c.last_name].filter(Boolean).join(' '),
      phone,
      email: c.email ?? '',
      tags: c.tags ?? [],
      ...zones.get(c.id)!,
      status: 'pending',
      attempt_count: 0,
      last_attempted_at: null,
      next_retry_at: null,
      call_duration_sec: 0,
      error_message: '',
      call_session_id: '',
      ...(owner ? { duplicate_of: owner } : {}),
      ...dueIndex(orgId, campaignId, id, at),
      ...contactStatusIndex(orgId, campaignId, id, 'pending'),
      created_at: at,
      updated_at: at,
    };
    items.push(item as unknown as Record<string, unknown>);
  }
  await putMany(items, { parallel: ADD_WRITE_PARALLEL });
  return fresh.length;
}

/**
 * Creates a draft campaign. The campaign contacts are written first (in the campaign's own
 * partition), then the campaign with exact `contact_stats` and its counters in one transaction
 * guarded by the agent and the number: a crash in between leaves only unreachable items.
 */
export async function createCampaign(orgId: string, input: CreateCampaignInput): Promise<Campaign> {
  const schedule = mergeSchedule({ ...scheduleDefaults }, input.schedule);
  await checkLine(orgId, input);
  const pin = input.agent_version ?? null;
  if (typeof pin === 'number' && !(await versionExists(orgId, input.agent_id, pin))) throw ValidationError.field('agent_version', `agent ${input.agent_id} has no version ${pin}`);
  const contacts = await loadContacts(orgId, input.contact_ids, 'contact_ids');
  const id = uuidv7();
  const now = nowIso();
  const added = await writeCampaignContacts(orgId, id, contacts, now, false);
  const campaign: Campaign = {
    id,
    organization_id: orgId,
    name: input.name,
    agent_id: input.agent_id,
    agent_version: typeof pin === 'number' ? pin : null,
    phone_number_id: input.phone_number_id,
    from_phone_number: input.from_phone_number,
    status: 'draft',
    execution_status: 'idle',
    schedule,
    contact_stats: { ...emptyStats(), total: added, pending: added },
    pause_reason: null,
    started_at: null,
    completed_at: null,
    created_at: now,
    updated_at: now,
  };
  const item: CampaignItem = { ...keys.campaign(orgId, id), entity: CAMPAIGN_ENTITY, version: 1, ...statusIndex(orgId, id, 'draft'), ...campaign, agent_version_pin: pin };
  await withRetries(() =>
    transact(
      [putNew(item as unknown as Record<string, unknown>)],
      [
        { orgId, collection: collections.campaigns, delta: 1 },
        { orgId, collection: collections.campaignsByStatus('draft'), delta: 1 },
      ],
      lineGuards(orgId, input.agent_id, input.phone_number_id),
    ),
  );
  return campaign;
}

function lineGuards(orgId: string, agentId: string, numberId: string): Guard[] {
  return [
    references.agent(orgId, agentId),
    {
      key: keys.phoneNumber(orgId, numberId),
      condition: 'attribute_exists(pk) AND #st = :active',
      names: { '#st': 'status' },
      values: { ':active': 'active' },
      onFail: () => ValidationError.field('phone_number_id', `phone number ${numberId} does not exist in this organization`),
    },
  ];
}

/** Retries a write that lost a transaction race; other failures pass through. */
async function withRetries<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!(err instanceof ConditionFailed) || err.message !== 'transaction conflict' || attempt + 1 >= MAX_ATTEMPTS) throw err;
      await pause(attempt);
    }
  }
}

const stateConflict = (item: CampaignItem, action: string) =>
  new ConflictError(`A ${item.status} campaign cannot be ${action}`, { id: item.id, status: item.status });

/**
 * PATCH: only the supplied fields change; `schedule` merges member by member over the stored
 * one. Any state but `completed`; a running campaign takes the change at its next dispatch. A
 * new number on a running or paused campaign moves `in_use` from the old number to the new one.
 */
export async function updateCampaign(orgId: string, id: string, input: UpdateCampaignInput): Promise<Campaign> {
  requireSomeField(input);
  for (let attempt = 0; ; attempt++) {
    const item = await getCampaignItem(orgId, id);
    if (item.status === 'completed') throw stateConflict(item, 'changed');
    const next = { ...campaignView(item) };
    if (input.name !== undefined) next.name = input.name;
    if (input.agent_id !== undefined) next.agent_id = input.agent_id;
    if (input.phone_number_id !== undefined) next.phone_number_id = input.phone_number_id;
    if (input.from_phone_number !== undefined) next.from_phone_number = input.from_phone_number;
    if (input.schedule) next.schedule = mergeSchedule(item.schedule, input.schedule);
    const lineChanged = input.phone_number_id !== undefined || input.from_phone_number !== undefined;
    if (lineChanged || input.agent_id !== undefined) {
      await checkLine(orgId, { agent_id: input.agent_id, phone_number_id: next.phone_number_id, from_phone_number: next.from_phone_number });
    }
    const version = await versionChange(orgId, item, next.agent_id, input.agent_version);
    if (version) next.agent_version = version.agent_version;
    next.updated_at = nowIso();
    const holdsNumber = item.status === 'running' || item.status === 'paused';
    const numberMoved = holdsNumber && next.phone_number_id !== item.phone_number_id;
    try {
      await transact(
        [
          updateWrite(keys.campaign(orgId, id), {
            set: { name: next.name, agent_id: next.agent_id, phone_number_id: next.phone_number_id, from_phone_number: next.from_phone_number, schedule: next.schedule, ...version, updated_at: next.updated_at },
            add: { version: 1 },
            condition: '#ver = :ver',
            names: { '#ver': 'version' },
            values: { ':ver': item.version },
          }),
          ...(numberMoved ? [numberInUse(orgId, next.phone_number_id, 1), numberInUse(orgId, item.phone_number_id, -1)] : []),
        ],
        [],
        [...(input.agent_id ? [references.agent(orgId, next.agent_id)] : [])],
      );
      return (await getCampaign(orgId, id));
    } catch (err) {
      if (!(err instanceof ConditionFailed) || attempt + 1 >= MAX_ATTEMPTS) throw err;
      await pause(attempt);
    }
  }
}

/**
 * The version fields a PATCH writes (undefined: none change). The version is the agent's, so a new
 * `agent_id` never keeps the old agent's number: before the first start the campaign's pin becomes
 * the given `agent_version` (or none: the published version at the start); after it, the campaign
 * runs the given version, else the new agent's published version (else its draft) from its next
 * call. A number the (new) agent does not have is a 400 naming `agent_version`.
 */
async function versionChange(
  orgId: string,
  item: CampaignItem,
  agentId: string,
  given: number | 'draft' | undefined,
): Promise<{ agent_version: number | null; agent_version_fixed?: true; agent_version_pin?: number | 'draft' | null } | undefined> {
  const agentChanged = agentId !== item.agent_id;
  if (!agentChanged && given === undefined) return undefined;
  if (typeof given === 'number' && !(await versionExists(orgId, agentId, given))) throw ValidationError.field('agent_version', `agent ${agentId} has no version ${given}`);
  if (item.agent_version_fixed) {
    // A version set after the start is the user's pin too: a traffic split no longer draws the campaign's calls.
    if (given !== undefined) return { agent_version: given === 'draft' ? null : given, agent_version_fixed: true, agent_version_pin: given };
    const agent = await getItem<{ published_version?: number | null }>(keys.agent(orgId, agentId));
    return { agent_version: agent?.published_version ?? null, agent_version_fixed: true };
  }
  return { agent_version: typeof given === 'number' ? given : null, agent_version_pin: given ?? null };
}

/** A campaign's state move: the campaign write, counters, number and event in one transaction. */
async function move(
  orgId: string,
  id: string,
  action: string,
  allowed: CampaignStatus[],
  build: (item: CampaignItem, now: string) => { set: Record<string, unknown>; remove?: string[]; to: CampaignStatus; extra?: Parameters<typeof transact>[0]; event?: PlatformEvent['type']; guards?: Guard[] },
): Promise<{ campaign: Campaign; before: CampaignItem }> {
  for (let attempt = 0; ; attempt++) {
    let item = await getCampaignItem(orgId, id);
    if (!allowed.includes(item.status)) throw stateConflict(item, action);
    item = await repairInterruptedAdd(item);
    if (item.adding_until) throw new ConflictError('Contacts are being added to this campaign; retry in a moment', { id });
    const now = nowIso();
    const plan = build(item, now);
    const after = { ...item, ...plan.set } as CampaignItem;
    const event = plan.event ? newEvent(orgId, plan.event, campaignView(after) as unknown as Record<string, unknown>, new Date(now)) : undefined;
    const counters: CounterDelta[] = [
      { orgId, collection: collections.campaignsByStatus(item.status), delta: -1 },
      { orgId, collection: collections.campaignsByStatus(plan.to), delta: 1 },
    ];
    try {
      await transact(
        [
          updateWrite(keys.campaign(orgId, id), {
            set: { ...plan.set, status: plan.to, ...statusIndex(orgId, id, plan.to), updated_at: now },
            remove: plan.remove,
            add: { version: 1 },
            condition: '#st = :from AND attribute_not_exists(adding_until)',
            names: { '#st': 'status' },
            values: { ':from': item.status },
          }),
          ...(plan.extra ?? []),
          ...(event ? [event.write] : []),
        ],
        counters,
        plan.guards ?? [],
      );
      if (event) await dispatchEvents([event.event]);
      return { campaign: await getCampaign(orgId, id), before: item };
    } catch (err) {
      if (!(err instanceof ConditionFailed) || attempt + 1 >= MAX_ATTEMPTS) throw err;
      // Lost a race: either the state moved (answered from the fresh read) or the number was released.
      const number = await getItem<PhoneNumberItem>(keys.phoneNumber(orgId, item.phone_number_id));
      if (item.status === 'draft' && plan.to === 'running' && number?.status !== 'active') {
        throw new ConflictError('The campaign\'s phone number is no longer active', { phone_number_id: item.phone_number_id });
      }
      await pause(attempt);
    }
  }
}

/**
 * Starts a draft campaign or resumes a paused one (clearing its `pause_reason`); the first start
 * raises the number's `in_use` and emits `campaign.started`.
 */
export async function startCampaign(orgId: string, id: string): Promise<Campaign> {
  // The first start fixes the version every call uses (agents/versions.ts): the pin, else the agent's published version, else the draft.
  const before = await getCampaignItem(orgId, id);
  const fixVersion = !before.agent_version_fixed ? await startingVersion(orgId, before) : undefined;
  const { campaign } = await move(orgId, id, 'started', ['draft', 'paused'], (item, now) => ({
    to: 'running',
    set: {
      execution_status: 'waiting_window', pause_reason: null, started_at: item.started_at ?? now, ...activeIndex(orgId, id),
      ...(!item.agent_version_fixed && fixVersion !== undefined && item.agent_id === before.agent_id ? { agent_version: fixVersion, agent_version_fixed: true } : {}),
    },
    ...(item.status === 'draft'
      ? { extra: [numberInUse(orgId, item.phone_number_id, 1)], event: 'campaign.started' as const, guards: [references.agent(orgId, item.agent_id)] }
      : {}),
  }));
  // Its contacts are due (a resume: the ones it left): the tick's marker comes now (engine.ts, runTick).
  await noteDue('campaign-tick', nowIso());
  await queue().send('campaign-dispatch', { organization_id: orgId, campaign_id: id });
  return campaign;
}

/** The version a campaign's calls use from its first start: its pin, else the agent's published version, else null (the draft). */
async function startingVersion(orgId: string, item: CampaignItem): Promise<number | null> {
  if (item.agent_version_pin === 'draft') return null;
  if (typeof item.agent_version_pin === 'number') return item.agent_version_pin;
  const agent = await getItem<{ published_version?: number | null }>(keys.agent(orgId, item.agent_id));
  return agent?.published_version ?? null;
}

/** running → paused: no new calls; calls in flight finish (the campaign stays in the engine's index for them). */
export async function pauseCampaign(orgId: string, id: string): Promise<Campaign> {
  return (await move(orgId, id, 'paused', ['running'], () => ({ to: 'paused', set: { execution_status: 'idle' } }))).campaign;
}

/**
 * draft | running | paused → completed (`cancelled`). Releases the number, emits
 * `campaign.completed`, and fails every pending contact with "campaign cancelled" (inline for a
 * small campaign, page by page in the cleanup job for a large one). Calls in flight finish.
 */
export async function cancelCampaign(orgId: string, id: string): Promise<Campaign> {
  const { before } = await move(orgId, id, 'cancelled', ['draft', 'running', 'paused'], (item, now) => ({
    to: 'completed',
    set: { execution_status: 'cancelled', completed_at: now },
    ...(item.contact_stats.in_progress === 0 ? { remove: ['gsi2pk', 'gsi2sk'] } : {}),
    extra: item.status === 'draft' ? [] : [numberInUse(orgId, item.phone_number_id, -1)],
    event: 'campaign.completed',
  }));
  if (before.contact_stats.pending > INLINE_CLEANUP_LIMIT) await queue().send('campaign-cleanup', { organization_id: orgId, campaign_id: id, op: 'cancel' });
  else await failPending(orgId, id, 'campaign cancelled');
  return getCampaign(orgId, id);
}

/**
 * Deletes a campaign that is not running (409 otherwise): the campaign and its counters in one
 * transaction (a paused campaign gives its number back), then its campaign contacts: inline when
 * few, else in pages by the cleanup job (the answer does not wait).
 */
export async function deleteCampaign(orgId: string, id: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const item = await getCampaignItem(orgId, id);
    if (item.status === 'running') throw new ConflictError('A running campaign cannot be deleted; pause or cancel it first', { id });
    try {
      await transact(
        [
          deleteExisting(keys.campaign(orgId, id), '#st = :st AND #ver = :ver', { ':st': item.status, ':ver': item.version }, { '#st': 'status', '#ver': 'version' }),
          ...(item.status === 'paused' ? [numberInUse(orgId, item.phone_number_id, -1)] : []),
        ],
        [
          { orgId, collection: collections.campaigns, delta: -1 },
          { orgId, collection: collections.campaignsByStatus(item.status), delta: -1 },
        ],
      );
      if (item.contact_stats.total > INLINE_CLEANUP_LIMIT) await queue().send('campaign-cleanup', { organization_id: orgId, campaign_id: id, op: 'purge' });
      else await deletePartition(keys.campaignPartition(orgId, id));
      return;
    } catch (err) {
      if (!(err instanceof ConditionFailed) || attempt + 1 >= MAX_ATTEMPTS) throw err;
      await pause(attempt);
    }
  }
}

/**
 * A crashed add leaves its lock (`adding_until`) to expire; whoever next finds it expired
 * recounts the campaign's contacts from the items and clears the lock, so `contact_stats`
 * is exact again.
 */
async function repairInterruptedAdd(item: CampaignItem): Promise<CampaignItem> {
  if (!item.adding_until || item.adding_until > nowIso()) return item;
  const stats = await recountContacts(item.organization_id, item.id);
  await transact([
    updateWrite(keys.campaign(item.organization_id, item.id), {
      set: { contact_stats: stats },
      remove: ['adding_until'],
      condition: '#lock = :lock',
      names: { '#lock': 'adding_until' },
      values: { ':lock': item.adding_until },
    }),
  ]).catch((err) => {
    if (!(err instanceof ConditionFailed)) throw err;
  });
  return getCampaignItem(item.organization_id, item.id);
}

/**
 * Adds contacts to a draft or paused campaign. Holds the campaign (a lock with an expiry that a
 * start or another add respects) while it writes, so two adds cannot count one contact twice;
 * contacts already in it and duplicates in the list are ignored; answers the updated campaign.
 */
export async function addCampaignContacts(orgId: string, id: string, contactIds: string[]): Promise<Campaign> {
  let item = await getCampaignItem(orgId, id);
  if (item.status !== 'draft' && item.status !== 'paused') throw new ConflictError(`Contacts can only be added to a draft or paused campaign; this one is ${item.status}`, { id, status: item.status });
  item = await repairInterruptedAdd(item);
  const contacts = await loadContacts(orgId, contactIds, 'contact_ids');
  const lock = new Date(clockMs() + ADD_LOCK_MS).toISOString();
  try {
    await transact([
      updateWrite(keys.campaign(orgId, id), {
        set: { adding_until: lock },
        condition: '#st IN (:draft, :paused) AND attribute_not_exists(adding_until)',
        names: { '#st': 'status' },
        values: { ':draft': 'draft', ':paused': 'paused' },
      }),
    ]);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    const fresh = await getCampaignItem(orgId, id);
    if (fresh.status !== 'draft' && fresh.status !== 'paused') throw stateConflict(fresh, 'given contacts');
    throw new ConflictError('Contacts are being added to this campaign by another request; retry in a moment', { id });
  }
  let added = 0;
  try {
    added = await writeCampaignContacts(orgId, id, contacts, nowIso(), true);
  } finally {
    await transact([
      updateWrite(keys.campaign(orgId, id), {
        set: { updated_at: nowIso() },
        add: { 'contact_stats.total': added, 'contact_stats.pending': added },
        remove: ['adding_until'],
        condition: '#lock = :lock',
        names: { '#lock': 'adding_until' },
        values: { ':lock': lock },
      }),
    ]);
  }
  return getCampaign(orgId, id);
}

/** A page of a campaign's contacts, optionally of one status (its own index; total from `contact_stats`). */
export async function listCampaignContacts(orgId: string, id: string, query: PageRequest & { status?: CampaignContactStatus }) {
  const campaign = await getCampaignItem(orgId, id);
  const page = query.status
    ? await queryPage<CampaignContactItem>({ index: 'gsi2', pkName: 'gsi2pk', pkValue: gsi2.campaignContactsByStatus(orgId, id, query.status), skName: 'gsi2sk' }, query)
    : await queryPage<CampaignContactItem>({ pkName: 'pk', pkValue: keys.campaignPartition(orgId, id), skName: 'sk', skPrefix: Prefix.campaignContact }, query);
  const total = query.status ? campaign.contact_stats[query.status] : campaign.contact_stats.total;
  return listResult({ items: page.items.map(campaignContactView), nextCursor: page.nextCursor }, total, query);
}


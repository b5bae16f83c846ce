import { collections, gsi1, gsi2, keys } from '../../db/keys';
import { ConditionFailed, getItem, queryAll, queryPage, readCounter, transact } from '../../db/store';
import { ConcurrencyLimitError } from '../../errors';
import { campaignSlotShare } from '../concurrency/slots';
import { tableName } from '../../db/client';
import { clockNow } from '../../clock';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { deletePartition, getKeyed, getMany } from '../../db/filtered-query';
import { updateWrite } from '../../db/update';
import { logger } from '../../logger';
import { blockOf, DNC_MESSAGES } from '../dnc/service';
import { dispatchEvents, newEvent } from '../events/publish';
import { campaignDialer } from './dialer';
import { backoffDue, failedItems, queueDispatch, retireIfDone, settle, type DispatchMessage } from './outcomes';
import {
  ACTIVE_SHARDS,
  campaignView,
  contactStatusIndex,
  dueIndex,
  LEASE_MS,
  leaseIndex,
  statusIndex,
  type CampaignContactItem,
  type CampaignItem,
} from './model';
import type { PauseReason } from './schemas';
import { isOpen, nextOpening } from './window';
import { failPending } from './fail-pending';
import { armSweep, earlier, noteDue, sweepDue } from '../../db/sweep-marker';

/**
 * The campaign engine.
 *
 * - tick (every minute): reads the sparse active-campaigns index (a few shard partitions, never
 *   a Scan) and queues one `campaign-dispatch` message per campaign. It only opens windows and
 *   recovers: calls follow one another through the outcomes.
 * - dispatch: recovers expired leases, then fills free capacity (`max_concurrent` minus the
 *   campaign's `in_progress`, kept exact in the campaign item) from the due index (pending
 *   contacts by due time, read up to now: O(due now)). Each claim is one transaction: the
 *   contact pending → in_progress conditioned on its status and attempt count, the campaign's
 *   counters conditioned on `running` and `in_progress < max_concurrent`. A duplicated dispatch
 *   therefore never claims a contact twice or exceeds the limit.
 * - a claimed contact carries a lease until its call is placed; a worker that dies in between
 *   leaves it in the lease index, and the next dispatch places the same attempt again through
 *   the idempotent dialer.
 * - outcome (./outcomes.ts, where the calls service reports ends): the contact and the campaign's counters in one transaction conditioned on the
 *   contact being in_progress at that attempt (a duplicate changes nothing); retries go back to
 *   pending with a due time; then the next due contact is dispatched at once, and the campaign
 *   completes when nothing is pending or in progress.
 */

/** The dispatch job's message (declared with the outcomes, which queue dispatches too). */
export type { DispatchMessage };

/** Due entries examined by one dispatch before it hands over to a fresh message. */
const DISPATCH_BUDGET = 1000;
const PAGE = 100;

const iso = (d: Date) => d.toISOString();
const campaignKey = (orgId: string, id: string) => keys.campaign(orgId, id);
const contactKey = (orgId: string, campaignId: string, id: string) => keys.campaignContact(orgId, campaignId, id);

/**
 * How far ahead the tick's marker may be armed: an idle platform still runs the tick (and a
 * dispatch of each active campaign) once an hour, so a due entry a racing read missed (global
 * indexes are eventually consistent) or a dispatch that died waits at most this long.
 */
export const TICK_HORIZON_MS = 60 * 60_000;

/**
 * The per-minute tick: one dispatch message per campaign in the active index, when the tick's
 * marker (shared/db/sweep-marker.ts, `campaign-tick`) has come. The marker is a lower bound of
 * what a dispatch could act on: every campaign's due entries (lowered by starts and resumes,
 * retries and back-offs, undone claims, after their writes) and leases (lowered by the claims).
 * A tick that runs arms it to its horizon first, then queues the dispatches (flagged `tick`); each
 * lowers it to the earliest entry it left: a due contact it could not dial (no free slot), the
 * next due one, the next window opening of a one-zone campaign, a lease. So at night, over
 * weekends and blackout days an idle minute costs one GetItem.
 */
export async function runTick(now = clockNow()): Promise<{ queued: number; ran: boolean }> {
  const gate = await sweepDue('campaign-tick', iso(now), TICK_HORIZON_MS);
  if (!gate.due) return { queued: 0, ran: false };
  await armSweep('campaign-tick', iso(new Date(now.getTime() + TICK_HORIZON_MS)));
  let queued = 0;
  await Promise.all(
    Array.from({ length: ACTIVE_SHARDS }, async (_, shard) => {
      const entries = queryAll<{ organization_id: string; id: string }>(
        { index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.activeCampaigns(shard), skName: 'gsi2sk' },
        ['organization_id', 'id'],
      );
      for await (const entry of entries) {
        await queueDispatch(entry.organization_id, entry.id, 'tick');
        queued++;
      }
    }),
  );
  return { queued, ran: true };
}

/** The time of the first entry of one of a campaign's sparse indexes (`due_at` or `lease_until`), or undefined. */
async function firstEntry(pkValue: string, field: 'due_at' | 'lease_until'): Promise<string | undefined> {
  const page = await queryPage<CampaignContactItem>({ index: gsi1.name, pkName: 'gsi1pk', pkValue, skName: 'gsi1sk' }, { limit: 1 });
  return page.items[0]?.[field] ?? undefined;
}

/**
 * After a dispatch the tick queued: the tick's marker falls to the earliest thing this campaign
 * left (its first lease; its first due entry when it runs, not before its window's next opening
 * when one zone applies and the window is closed).
 */
async function settleTickMarker(orgId: string, campaignId: string, now: Date): Promise<void> {
  const campaign = await getItem<CampaignItem>(campaignKey(orgId, campaignId));
  if (!campaign) return;
  const running = campaign.status === 'running';
  const [lease, due] = await Promise.all([
    firstEntry(gsi1.campaignLeases(orgId, campaignId), 'lease_until'),
    running ? firstEntry(gsi1.campaignDue(orgId, campaignId), 'due_at') : Promise.resolve(undefined),
  ]);
  let dueAt = due;
  if (dueAt && !campaign.schedule.use_contact_timezone && !isOpen(campaign.schedule, now)) {
    const opening = nextOpening(campaign.schedule, now);
    dueAt = opening ? (opening.toISOString() > dueAt ? opening.toISOString() : dueAt) : undefined;
  }
  const left = earlier(lease, dueAt);
  if (left) await noteDue('campaign-tick', left);
}

export const DUPLICATE_MESSAGE = 'duplicate phone number';

/**
 * Why a due contact is failed without a call, or null when it may be dialed: dialBlock's rule
 * (dnc/service.ts: opt-out first, then the list), from the contact and do-not-call entry read with the page.
 */
function blockReason(cc: CampaignContactItem, contact: { phone?: string; opt_out?: boolean } | undefined, listed: boolean): string | null {
  if (!contact) return 'contact deleted';
  if (!cc.phone) return 'contact has no phone number';
  if (cc.duplicate_of) return DUPLICATE_MESSAGE;
  const block = blockOf(contact, listed);
  return block ? DNC_MESSAGES[block] : null;
}

/**
 * What a page of due contacts needs, in one strongly consistent BatchGetItem (as many as 100 keys
 * take): their contacts, their numbers' do-not-call entries, and the campaign's agent and number
 * (lineProblem's reads, for the first claim).
 */
async function readForPage(campaign: CampaignItem, due: CampaignContactItem[]) {
  const orgId = campaign.organization_id;
  const line = { agent: keys.agent(orgId, campaign.agent_id), number: keys.phoneNumber(orgId, campaign.phone_number_id) };
  const wanted = [line.agent, line.number, ...due.flatMap((cc) => [keys.contact(orgId, cc.contact_id), ...(cc.phone ? [keys.dnc(orgId, cc.phone)] : [])])];
  const item = await getKeyed(wanted, { projection: ['id', 'phone', 'opt_out', 'status'] });
  return {
    contact: (cc: CampaignContactItem) => item<{ phone?: string; opt_out?: boolean }>(keys.contact(orgId, cc.contact_id)),
    listed: (cc: CampaignContactItem) => !!cc.phone && item(keys.dnc(orgId, cc.phone)) !== undefined,
    line: lineProblemOf(item<{ status?: string }>(line.agent), item<{ status?: string }>(line.number)),
  };
}

/** A pending contact failed without a call (do-not-call, opt-out, duplicate…), with its counters. */
async function failWithoutCall(orgId: string, cc: CampaignContactItem, message: string, now: Date, round = 0): Promise<boolean> {
  try {
    await transact([
      updateWrite(contactKey(orgId, cc.campaign_id, cc.id), {
        set: { status: 'failed', error_message: message, next_retry_at: null, updated_at: iso(now), ...contactStatusIndex(orgId, cc.campaign_id, cc.id, 'failed') },
        remove: ['due_at', 'gsi1pk', 'gsi1sk'],
        condition: '#st = :pending AND #ac = :ac',
        names: { '#st': 'status', '#ac': 'attempt_count' },
        values: { ':pending': 'pending', ':ac': cc.attempt_count },
      }),
      updateWrite(campaignKey(orgId, cc.campaign_id), { add: { 'contact_stats.pending': -1, 'contact_stats.failed': 1 } }),
    ]);
    return true;
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    if (err.message !== 'transaction conflict' || round + 1 >= MAX_ATTEMPTS) return false;
    await pause(round);
    return failWithoutCall(orgId, cc, message, now, round + 1);
  }
}

/**
 * Claims a due contact for its next attempt: the contact and the campaign's counters in one
 * transaction. 'contact' when the contact moved on (someone else claimed it), 'campaign' when the
 * campaign is full or no longer running.
 */
async function claim(campaign: CampaignItem, cc: CampaignContactItem, now: Date): Promise<CampaignContactItem | 'contact' | 'campaign' | 'duplicate'> {
  for (let round = 0; ; round++) {
    const result = await claimOnce(campaign, cc, now);
    if (result !== 'conflict' ) return result;
    if (round + 1 >= MAX_ATTEMPTS) return 'contact';
    await pause(round);
  }
}

async function claimOnce(campaign: CampaignItem, cc: CampaignContactItem, now: Date): Promise<CampaignContactItem | 'contact' | 'campaign' | 'duplicate' | 'conflict'> {
  const orgId = campaign.organization_id;
  const attempt = cc.attempt_count + 1;
  const lease = iso(new Date(now.getTime() + LEASE_MS));
  const set = {
    status: 'in_progress' as const,
    attempt_count: attempt,
    last_attempted_at: iso(now),
    next_retry_at: null,
    updated_at: iso(now),
    ...leaseIndex(orgId, campaign.id, cc.id, lease),
    ...contactStatusIndex(orgId, campaign.id, cc.id, 'in_progress'),
  };
  try {
    await transact([
      updateWrite(contactKey(orgId, campaign.id, cc.id), {
        set,
        remove: ['due_at'],
        condition: '#st = :pending AND #ac = :ac AND #due <= :now',
        names: { '#st': 'status', '#ac': 'attempt_count', '#due': 'due_at' },
        values: { ':pending': 'pending', ':ac': cc.attempt_count, ':now': iso(now) },
      }),
      updateWrite(campaignKey(orgId, campaign.id), {
        add: { 'contact_stats.pending': -1, 'contact_stats.in_progress': 1, ...(attempt === 1 ? { 'contact_stats.contacted': 1 } : {}) },
        condition: '#st = :running AND #cs.#ip < #sc.#max',
        names: { '#st': 'status', '#cs': 'contact_stats', '#ip': 'in_progress', '#sc': 'schedule', '#max': 'max_concurrent' },
        values: { ':running': 'running' },
      }),
      // The number's marker: the first campaign contact dialed on a number owns it; another one
      // with the same number (brought by another add) fails as a duplicate, atomically with the claim.
      ...(cc.phone
        ? [{
            Put: {
              TableName: tableName(),
              Item: { ...keys.campaignNumber(orgId, campaign.id, cc.phone), entity: 'CAMPAIGN_NUMBER', phone: cc.phone, campaign_contact_id: cc.id },
              ConditionExpression: 'attribute_not_exists(pk) OR #owner = :me',
              ExpressionAttributeNames: { '#owner': 'campaign_contact_id' },
              ExpressionAttributeValues: { ':me': cc.id },
            },
          }]
        : []),
    ]);
    return { ...cc, ...set };
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    if (err.message === 'transaction conflict') return 'conflict';
    const failed = failedItems(err);
    if (failed.includes(1)) return 'campaign';
    return failed.includes(2) && !failed.includes(0) ? 'duplicate' : 'contact';
  }
}

/** What placing a claimed contact came to. */
/** A placement's outcome; `at_limit`: the organization's live calls were at its concurrency limit (the contact waits, no failure counted). */
type Placement = 'placed' | 'due_again' | 'paused' | 'at_limit';

/**
 * What keeps the campaign's line from dialing for good (waiting would not heal it): its agent
 * deleted or inactive, its number released. Null when it can dial.
 */
async function lineProblem(campaign: CampaignItem): Promise<PauseReason | null> {
  const orgId = campaign.organization_id;
  const [agent, number] = await Promise.all([
    getItem<{ status?: string }>(keys.agent(orgId, campaign.agent_id)),
    getItem<{ status?: string }>(keys.phoneNumber(orgId, campaign.phone_number_id)),
  ]);
  return lineProblemOf(agent, number);
}

/** lineProblem's rule, from the agent and number as read. */
function lineProblemOf(agent: { status?: string } | undefined, number: { status?: string } | undefined): PauseReason | null {
  if (!agent) return 'agent_deleted';
  if (agent.status === 'AGENT_STATUS_INACTIVE') return 'agent_inactive';
  if (number?.status !== 'active') return 'number_inactive';
  return null;
}

/**
 * The engine pauses a running campaign that can no longer dial: `paused` with its `pause_reason`
 * and a `campaign.paused` event in one transaction (conditioned on `running`, so once). Calls in
 * flight finish; a start resumes it once the line is repaired.
 */
async function pauseForLine(campaign: CampaignItem, reason: PauseReason, now: Date): Promise<void> {
  const orgId = campaign.organization_id;
  const after = { ...campaign, status: 'paused' as const, execution_status: 'idle' as const, pause_reason: reason, updated_at: iso(now) };
  const event = newEvent(orgId, 'campaign.paused', campaignView(after) as unknown as Record<string, unknown>, now);
  try {
    await transact(
      [
        updateWrite(campaignKey(orgId, campaign.id), {
          set: { status: 'paused', execution_status: 'idle', pause_reason: reason, updated_at: iso(now), ...statusIndex(orgId, campaign.id, 'paused') },
          add: { version: 1 },
          condition: '#st = :running',
          names: { '#st': 'status' },
          values: { ':running': 'running' },
        }),
        event.write,
      ],
      [
        { orgId, collection: collections.campaignsByStatus('running'), delta: -1 },
        { orgId, collection: collections.campaignsByStatus('paused'), delta: 1 },
      ],
    );
  } catch (err) {
    if (err instanceof ConditionFailed) return; // paused, cancelled or raced by another worker
    throw err;
  }
  logger.warn('The campaign can no longer dial; it is paused', { campaign_id: campaign.id, pause_reason: reason });
  await dispatchEvents([event.event]);
}

/**
 * Undoes the claim of a contact whose call was not placed (for any attempt: the condition is the
 * claim itself, status and attempt, and that no call was recorded for it since): the contact is
 * pending again at its previous attempt count, due at `due`, and its slot is free. If the
 * campaign was cancelled meanwhile, the contact fails "campaign cancelled" instead, so a
 * cancelled campaign never keeps a contact pending or in progress without a call.
 */
async function unclaim(campaign: CampaignItem, cc: CampaignContactItem, now: Date, to: { due: string; dialFailures?: number }): Promise<void> {
  const orgId = campaign.organization_id;
  const key = contactKey(orgId, campaign.id, cc.id);
  const previousCall = cc.call_session_id ?? '';
  const claimed = {
    condition: `#st = :ip AND #ac = :ac AND ${previousCall ? '#cid = :cid' : '(attribute_not_exists(#cid) OR #cid = :cid)'}`,
    names: { '#st': 'status', '#ac': 'attempt_count', '#cid': 'call_session_id' },
    values: { ':ip': 'in_progress', ':ac': cc.attempt_count, ':cid': previousCall },
  };
  const attempt = cc.attempt_count - 1;
  const contacted: Record<string, number> = cc.attempt_count === 1 ? { 'contact_stats.contacted': -1 } : {};
  for (let round = 0; round < MAX_ATTEMPTS; round++) {
    try {
      await transact([
        updateWrite(key, {
          set: {
            status: 'pending', attempt_count: attempt, updated_at: iso(now), next_retry_at: to.dialFailures ? to.due : null,
            ...(to.dialFailures !== undefined ? { dial_failures: to.dialFailures } : {}),
            ...dueIndex(orgId, campaign.id, cc.id, to.due), ...contactStatusIndex(orgId, campaign.id, cc.id, 'pending'),
          },
          remove: ['lease_until'],
          ...claimed,
        }),
        updateWrite(campaignKey(orgId, campaign.id), {
          add: { 'contact_stats.pending': 1, 'contact_stats.in_progress': -1, ...contacted },
          condition: '#cst <> :completed',
          names: { '#cst': 'status' },
          values: { ':completed': 'completed' },
        }),
      ]);
      await noteDue('campaign-tick', to.due);
      return;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (err.message === 'transaction conflict') {
        await pause(round);
        continue;
      }
      if (failedItems(err).includes(0)) return; // the claim moved on (its call was recorded, or another undo)
      if (await failClaimed(campaign, cc, 'campaign cancelled', now)) return;
    }
  }
}

/** A claimed contact without a call, in a cancelled campaign: failed, its slot freed (conditioned on the claim). */
async function failClaimed(campaign: CampaignItem, cc: CampaignContactItem, message: string, now: Date): Promise<boolean> {
  const orgId = campaign.organization_id;
  try {
    await transact([
      updateWrite(contactKey(orgId, campaign.id, cc.id), {
        set: { status: 'failed', attempt_count: cc.attempt_count - 1, error_message: message, next_retry_at: null, updated_at: iso(now), ...contactStatusIndex(orgId, campaign.id, cc.id, 'failed') },
        remove: ['lease_until', 'due_at', 'gsi1pk', 'gsi1sk'],
        condition: '#st = :ip AND #ac = :ac',
        names: { '#st': 'status', '#ac': 'attempt_count' },
        values: { ':ip': 'in_progress', ':ac': cc.attempt_count },
      }),
      updateWrite(campaignKey(orgId, campaign.id), {
        add: { 'contact_stats.in_progress': -1, 'contact_stats.failed': 1, ...(cc.attempt_count === 1 ? { 'contact_stats.contacted': -1 } : {}) },
      }),
    ]);
    return true;
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    return err.message !== 'transaction conflict';
  }
}

/**
 * Places the call of a claimed contact through the dialer (idempotent per contact and attempt)
 * and records its call session id, which ends the lease. When the dialer refuses, the claim is
 * undone (see unclaim) and the failure is told apart:
 * - lasting (the agent deleted or inactive, the number released): the contact is due again at
 *   once, unharmed, and the campaign pauses itself with its `pause_reason`;
 * - passing (anything else: a throttled table, an unreachable service): the contact is due again
 *   after a back-off that doubles with each failure in a row.
 */
async function place(campaign: CampaignItem, cc: CampaignContactItem, now: Date): Promise<Placement> {
  const orgId = campaign.organization_id;
  const key = contactKey(orgId, campaign.id, cc.id);
  const claimed = { condition: '#st = :ip AND #ac = :ac', names: { '#st': 'status', '#ac': 'attempt_count' }, values: { ':ip': 'in_progress', ':ac': cc.attempt_count } };
  let callId: string;
  try {
    ({ callId } = await campaignDialer().placeCampaignCall({
      organizationId: orgId,
      campaignId: campaign.id,
      campaignContactId: cc.id,
      attempt: cc.attempt_count,
      agentId: campaign.agent_id,
      // Every call of the campaign uses the version fixed at its first start, unless the agent's traffic split draws it (no pin).
      agentVersion: campaign.agent_version ?? null,
      splitDraw: campaign.agent_version_pin === undefined || campaign.agent_version_pin === null,
      fromPhoneNumber: campaign.from_phone_number,
      phoneNumberId: campaign.phone_number_id,
      toPhoneNumber: cc.phone,
      contactId: cc.contact_id,
      dynamicVariables: { contact_name: cc.name, contact_email: cc.email, campaign_name: campaign.name },
    }));
  } catch (err) {
    if (err instanceof ConcurrencyLimitError) {
      // Not the contact's failure: it is due again once a slot may have freed (the next dispatch or tick), its failures unchanged.
      await unclaim(campaign, cc, now, { due: iso(new Date(now.getTime() + err.retryAfterSeconds * 1000)) });
      return 'at_limit';
    }
    const problem = await lineProblem(campaign);
    if (problem) {
      logger.warn('A campaign call could not be placed: the campaign can no longer dial', { campaign_id: campaign.id, campaign_contact_id: cc.id, pause_reason: problem, error: err as Error });
      await unclaim(campaign, cc, now, { due: iso(now) });
      await pauseForLine(campaign, problem, now);
      return 'paused';
    }
    const failures = (cc.dial_failures ?? 0) + 1;
    const due = await backoffDue(campaign, cc, now, failures);
    logger.warn('A campaign call could not be placed; the contact is due again after a back-off', { campaign_id: campaign.id, campaign_contact_id: cc.id, due_at: due, error: err as Error });
    await unclaim(campaign, cc, now, { due, dialFailures: failures });
    return 'due_again';
  }
  await transact([
    updateWrite(key, { set: { call_session_id: callId, dial_failures: 0 }, remove: ['lease_until', 'gsi1pk', 'gsi1sk'], ...claimed }),
  ]).catch((e) => {
    // The call already ended and its outcome moved the contact on: nothing left to record.
    if (!(e instanceof ConditionFailed)) throw e;
  });
  return 'placed';
}

/**
 * Re-places the calls of contacts whose lease expired (claimed, never placed: the worker died).
 * Taking the lease over is conditional, so two dispatches never both re-place one contact, and
 * the dialer answers the same call for the same attempt. A campaign that no longer runs places
 * nothing new: a paused one gets the contact back as pending (due at once, dialed on resume), a
 * cancelled one fails it "campaign cancelled".
 */
async function recoverLeases(campaign: CampaignItem, now: Date): Promise<number> {
  const orgId = campaign.organization_id;
  const entries = queryAll<{ pk: string; sk: string }>(
    { index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.campaignLeases(orgId, campaign.id), skName: 'gsi1sk', skBelow: `${iso(now)}$` },
    ['pk', 'sk'],
  );
  const keysDue: { pk: string; sk: string }[] = [];
  for await (const e of entries) keysDue.push({ pk: e.pk, sk: e.sk });
  let recovered = 0;
  for (const cc of await getMany<CampaignContactItem>(keysDue)) {
    // A lease lasts until the attempt's call is recorded (which removes it): a retry carries the
    // previous attempt's call_session_id, so that is no sign of a placed call.
    if (cc.status !== 'in_progress' || !cc.lease_until || cc.lease_until > iso(now)) continue;
    const lease = iso(new Date(now.getTime() + LEASE_MS));
    try {
      await transact([
        updateWrite(contactKey(orgId, campaign.id, cc.id), {
          set: leaseIndex(orgId, campaign.id, cc.id, lease),
          condition: '#st = :ip AND #ac = :ac AND #lease = :lease',
          names: { '#st': 'status', '#ac': 'attempt_count', '#lease': 'lease_until' },
          values: { ':ip': 'in_progress', ':ac': cc.attempt_count, ':lease': cc.lease_until },
        }),
      ]);
    } catch (err) {
      if (err instanceof ConditionFailed) continue;
      throw err;
    }
    if (campaign.status === 'completed') {
      await failClaimed(campaign, cc, 'campaign cancelled', now);
      continue;
    }
    if (campaign.status === 'paused') {
      await unclaim(campaign, cc, now, { due: iso(now) });
      continue;
    }
    logger.warn('Re-placing a campaign call whose worker stopped before placing it', { campaign_id: campaign.id, campaign_contact_id: cc.id, attempt: cc.attempt_count });
    const placed = await place(campaign, cc, now);
    if (placed === 'placed') recovered++;
    if (placed === 'paused') break;
  }
  return recovered;
}

/** Moves a pending contact whose window is closed to its next opening (its due-index entry with it). */
async function postpone(orgId: string, cc: CampaignContactItem, to: Date | null, now: Date): Promise<void> {
  // A window that never opens again: far in the future, so it is not read again every minute.
  const due = to ? iso(to) : '9999-12-31T00:00:00.000Z';
  await transact([
    updateWrite(contactKey(orgId, cc.campaign_id, cc.id), {
      set: { ...dueIndex(orgId, cc.campaign_id, cc.id, due), updated_at: iso(now) },
      condition: '#st = :pending AND #due = :due',
      names: { '#st': 'status', '#due': 'due_at' },
      values: { ':pending': 'pending', ':due': cc.due_at },
    }),
  ]).catch((err) => {
    if (!(err instanceof ConditionFailed)) throw err;
  });
}

export interface DispatchSummary {
  placed: number;
  failedWithoutCall: number;
  postponed: number;
  recovered: number;
  /** True when the budget ran out and a fresh dispatch was queued to continue. */
  continued: boolean;
}

/**
 * One dispatch of one campaign (the `campaign-dispatch` job). Safe to run twice at once or to
 * receive twice: every claim is conditional.
 */
export async function dispatchCampaign(orgId: string, campaignId: string, now = clockNow(), options: { tick?: boolean; outcome?: boolean } = {}): Promise<DispatchSummary> {
  const summary = await dispatchOnce(orgId, campaignId, now, options.tick === true, options.outcome !== true);
  if (options.tick) await settleTickMarker(orgId, campaignId, now);
  return summary;
}

async function dispatchOnce(orgId: string, campaignId: string, now: Date, tick: boolean, recover: boolean): Promise<DispatchSummary> {
  const summary: DispatchSummary = { placed: 0, failedWithoutCall: 0, postponed: 0, recovered: 0, continued: false };
  let campaign = await getItem<CampaignItem>(campaignKey(orgId, campaignId));
  if (!campaign) return summary;
  if (recover) summary.recovered = await recoverLeases(campaign, now);
  if (campaign.status !== 'running') {
    await retireIfDone(orgId, campaignId);
    return summary;
  }
  const schedule = campaign.schedule;
  // One zone for every contact: a closed window means nothing to do, without reading contacts.
  const windowOpen = schedule.use_contact_timezone || isOpen(schedule, now);
  // The campaign dials only into the organization's free slots, and its running campaigns share them (concurrency/slots.ts).
  let slotsLeft = windowOpen ? await campaignSlotShare(orgId, campaign.contact_stats.in_progress, () => readCounter(orgId, collections.campaignsByStatus('running'))) : 0;
  let capacity = Math.min(schedule.max_concurrent - campaign.contact_stats.in_progress, slotsLeft);
  let examined = 0;
  let exhausted = false;
  let lineChecked = false;
  if (windowOpen) {
    let cursor: string | undefined;
    while (!exhausted && capacity > 0) {
      if (examined >= DISPATCH_BUDGET) {
        summary.continued = true;
        await queueDispatch(orgId, campaignId, tick ? 'tick' : 'other');
        break;
      }
      const page = await dueEntries(orgId, campaignId, now, cursor, capacity);
      cursor = page.next;
      exhausted = !page.next;
      examined += page.items.length;
      const due = page.items.filter((cc) => cc.status === 'pending' && cc.due_at !== undefined && cc.due_at <= iso(now));
      const read = due.length ? await readForPage(campaign, due) : undefined;
      const dialable: CampaignContactItem[] = [];
      for (const cc of due) {
        const opening = nextOpening(schedule, now, cc.timezone);
        if (!opening || opening.getTime() > now.getTime()) {
          await postpone(orgId, cc, opening, now);
          summary.postponed++;
          continue;
        }
        dialable.push(cc);
      }
      const reasons = dialable.map((cc) => blockReason(cc, read!.contact(cc), read!.listed(cc)));
      // In due order (the due index's), which decides who keeps a shared number.
      const toDial = dialable.filter((_, i) => !reasons[i]);
      await Promise.all(
        dialable.map(async (cc, i) => {
          const reason = reasons[i];
          if (reason && (await failWithoutCall(orgId, cc, reason, now))) summary.failedWithoutCall++;
        }),
      );
      if (toDial.length && !lineChecked) {
        // Before the first claim: a line that can no longer dial pauses the campaign, and no contact is claimed.
        lineChecked = true;
        const problem = read!.line;
        if (problem) {
          await pauseForLine(campaign, problem, now);
          return summary;
        }
      }
      // Claimed in parallel, one contact per number at a time: of two contacts with one number, the
      // first in due order takes it (its claim writes the number's marker) and the other then fails as a duplicate.
      for (let waiting = toDial; waiting.length && capacity > 0; ) {
        const numbers = new Set<string>();
        const batch: CampaignContactItem[] = [];
        const later: CampaignContactItem[] = [];
        for (const cc of waiting) {
          if (batch.length < capacity && !numbers.has(cc.phone)) {
            numbers.add(cc.phone);
            batch.push(cc);
          } else later.push(cc);
        }
        waiting = later;
        const claims = await Promise.all(batch.map((cc) => claim(campaign!, cc, now)));
        const won = claims.filter((c): c is CampaignContactItem => typeof c === 'object');
        // The claims' leases are committed: the tick's marker falls to them (a worker that stops before placing is found then).
        if (won.length) await noteDue('campaign-tick', won[0]!.lease_until!);
        for (const [j, c] of claims.entries()) {
          if (c === 'duplicate' && (await failWithoutCall(orgId, batch[j]!, DUPLICATE_MESSAGE, now))) summary.failedWithoutCall++;
        }
        const placed = await Promise.all(won.map((cc) => place(campaign!, cc, now)));
        summary.placed += placed.filter((p) => p === 'placed').length;
        if (placed.includes('paused')) return summary;
        slotsLeft -= won.length;
        // The organization reached its limit meanwhile (another campaign, an inbound call): the rest waits for the next dispatch.
        if (placed.includes('at_limit')) slotsLeft = 0;
        if (claims.includes('campaign') || won.length < batch.length) {
          // The campaign filled up (a racing dispatch) or stopped: read its live counters.
          campaign = (await getItem<CampaignItem>(campaignKey(orgId, campaignId)))!;
          if (!campaign || campaign.status !== 'running') return summary;
        } else campaign = { ...campaign!, contact_stats: { ...campaign!.contact_stats, in_progress: campaign!.contact_stats.in_progress + won.length } };
        capacity = Math.min(campaign.schedule.max_concurrent - campaign.contact_stats.in_progress, slotsLeft);
      }
    }
  }
  // Calls placed by a campaign already 'dispatching': it has calls in flight (or their outcomes settle
  // it), so settling would read it for nothing.
  if (!(summary.placed > 0 && campaign.execution_status === 'dispatching')) await settle(orgId, campaignId);
  return summary;
}

/** Due contacts up to now, one page of the due index sized to the free slots (eventually consistent: every write on them is conditional). */
async function dueEntries(orgId: string, campaignId: string, now: Date, cursor: string | undefined, capacity: number) {
  const page = await queryPage<CampaignContactItem>(
    { index: gsi1.name, pkName: 'gsi1pk', pkValue: gsi1.campaignDue(orgId, campaignId), skName: 'gsi1sk', skBelow: `${iso(now)}$` },
    // As many as there are free slots, never more than a page: each one read costs a do-not-call
    // GetItem (and a contact read); those failed without a call or postponed leave slots the next page fills.
    { limit: Math.min(PAGE, capacity), cursor },
  );
  return { items: page.items, next: page.nextCursor ?? undefined };
}

/** The cleanup job: a cancelled campaign's pending contacts failed, or a deleted campaign's items removed. */
export async function runCleanup(message: DispatchMessage & { op: 'cancel' | 'purge' }): Promise<void> {
  if (message.op === 'cancel') await failPending(message.organization_id, message.campaign_id, 'campaign cancelled');
  else await deletePartition(keys.campaignPartition(message.organization_id, message.campaign_id));
}

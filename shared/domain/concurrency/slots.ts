import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { tableName } from '../../db/client';
import { gsi2, keys, Prefix } from '../../db/keys';
import { countRange, queryRange } from '../../db/filtered-query';
import { ConditionFailed, deleteExisting, getItem, ignoreConditionFailed, putNew, transact, updateExisting, type CounterDelta, type TransactItem } from '../../db/store';
import { config } from '../../config';
import { ConcurrencyLimitError } from '../../errors';

/**
 * Concurrency slots: an organization's live calls (outbound queued to the carrier, ringing or in
 * progress; inbound and web calls from their start) are counted on one counter item per
 * organization (`CONCURRENCY`: `total`, `outbound`, `inbound`, `web`, the organization's own
 * `limit`, the operator's `ceiling`), each holder a slot item per call (`SLOT#<call id>`).
 *
 * - Acquire: in the transaction that puts the call, the counter's `ADD total 1` conditioned on
 *   `total` being below the limit (the organization's, else the ceiling) and the slot's put with
 *   attribute_not_exists. Over the limit the whole transaction is cancelled: no call, no slot.
 * - Release: in the transaction that moves the call to `ended` (calls/lifecycle.ts moveCall, the
 *   one place a call ends), the slot's delete conditioned on it existing and `ADD total -1`. The
 *   move is itself conditioned on the call not being ended, so whatever ends the call (the carrier,
 *   the recovery sweep, a failed placement, a do-not-call cancel) frees the slot exactly once.
 * - Recovery: a slot carries an entry in the calls-due index (gsi2), due SLOT_GRACE_MS after its
 *   call's own due time. The recovery sweep finds it there (never a Scan): a slot whose call ended
 *   or does not exist is released (the same conditional transaction, so a race with the call's own
 *   end frees it once); one whose call still lives is moved on.
 *
 * The counter equals the number of slot items at every committed transaction, which is why it
 * is exact under races and under failed transactions (a failed one writes nothing).
 */
export type SlotKind = 'outbound' | 'inbound' | 'web';

export const SLOT_ENTITY = 'CONCURRENCY_SLOT';
/** How long after its call's due time a slot falls due for the recovery sweep. */
export const SLOT_GRACE_MS = 5 * 60_000;
/** `Retry-After` of a refusal at the limit: calls end at their own pace, so a short, fixed wait. */
export const RETRY_AFTER_SECONDS = 5;

/** The counter item as stored. */
export interface ConcurrencyItem {
  total?: number;
  outbound?: number;
  inbound?: number;
  web?: number;
  /** The organization's own limit (PATCH /concurrency); absent: the ceiling. */
  limit?: number;
  /** The operator's ceiling for this organization (the admin command); absent: CONCURRENCY_CEILING. */
  ceiling?: number;
  /** Calls waiting for a slot (`"queue": true`): moved only with their FIFO entries (waitWrites, leaveQueueWrites, a placement). */
  queued?: number;
}

export interface SlotItem {
  pk: string;
  sk: string;
  entity: typeof SLOT_ENTITY;
  organization_id: string;
  call_id: string;
  kind: SlotKind;
  acquired_at: string;
  due_at: string;
  gsi2pk: string;
  gsi2sk: string;
}

/** Which count a call's slot is in: a web call's, else its direction's. */
export const slotKindOf = (call: { channel?: string; direction: 'outbound' | 'inbound' }): SlotKind => (call.channel === 'web' ? 'web' : call.direction);

/**
 * How many calls a running campaign may place in one dispatch (campaigns/engine.ts): never more
 * than the organization's free slots (limit minus live calls: zero at the limit, so a campaign
 * dials only into free slots), and of them its fair share: up to its part of the limit among the
 * organization's running campaigns (less its own live calls), and at least its part of the slots
 * free now, so slots another campaign leaves unused are not kept idle. Campaigns dispatched in
 * turn each get theirs; none takes every slot. Two reads per dispatch.
 */
export async function campaignSlotShare(orgId: string, ownLive: number, runningCampaigns: () => Promise<number>): Promise<number> {
  const [item, running] = await Promise.all([readConcurrency(orgId), runningCampaigns()]);
  const { limit } = limitsOf(item);
  const free = limit - Math.max(0, item?.total ?? 0);
  if (free <= 0) return 0;
  const campaigns = Math.max(1, running);
  return Math.min(free, Math.max(Math.ceil(limit / campaigns) - Math.max(0, ownLive), Math.ceil(free / campaigns)));
}

/** The ceiling and limit in force for a counter item (the limit never above the ceiling). */
export function limitsOf(item: ConcurrencyItem | undefined): { ceiling: number; limit: number } {
  const ceiling = item?.ceiling ?? config().concurrencyCeiling;
  return { ceiling, limit: Math.min(item?.limit ?? ceiling, ceiling) };
}

/** The calls-due index's shards per hour (calls/service.ts CALL_DUE_SHARDS; a unit test keeps them equal). */
export const SLOT_DUE_SHARDS = 4;

/** The calls-due index attributes of a slot due at `dueAt` (its call's shard; sorted beside its call). */
function slotDue(orgId: string, callId: string, dueAt: string) {
  const shard = parseInt(callId.slice(-1), 16) % SLOT_DUE_SHARDS;
  return { due_at: dueAt, gsi2pk: gsi2.callsDue(dueAt.slice(0, 13), shard), gsi2sk: gsi2.callDueEntry(dueAt, orgId, `SLOT#${callId}`) };
}

const laterBy = (iso: string, ms: number) => new Date(Date.parse(iso) + ms).toISOString();

/**
 * The writes that take a slot for a new call, to add at the END of the transaction that puts the
 * call (acquireFailed tells their refusal from the others' conditions): the counter's conditional
 * increment, then the slot. `callDueAt` is the call's own recovery due time.
 */
export function acquireSlotWrites(orgId: string, callId: string, kind: SlotKind, callDueAt: string, now: string, options: AcquireOptions = {}): TransactItem[] {
  const names: Record<string, string> = { '#total': 'total', '#kind': kind, '#limit': 'limit', '#ceil': 'ceiling' };
  if (options.unlessWaiting || options.fromQueue) names['#queued'] = 'queued';
  return [
    {
      Update: {
        TableName: tableName(),
        Key: keys.concurrency(orgId),
        UpdateExpression: options.fromQueue ? 'ADD #total :one, #kind :one, #queued :minus' : 'ADD #total :one, #kind :one',
        // Below the organization's limit (when set) and below its ceiling (its own, else the setting's);
        // a call that would wait rather than be refused takes no slot ahead of calls already waiting.
        ConditionExpression: `(${BELOW_LIMIT})${options.unlessWaiting ? ' AND (attribute_not_exists(#queued) OR #queued < :one)' : ''}`,
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: { ':one': 1, ':ceiling': config().concurrencyCeiling, ...(options.fromQueue ? { ':minus': -1 } : {}) },
      },
    },
    putNew({ ...keys.concurrencySlot(orgId, callId), entity: SLOT_ENTITY, organization_id: orgId, call_id: callId, kind, acquired_at: now, ...slotDue(orgId, callId, laterBy(callDueAt, SLOT_GRACE_MS)) }),
  ];
}

/** The counter's condition that a slot is free: below the organization's limit and its ceiling. */
const BELOW_LIMIT = 'attribute_not_exists(#total) OR ((attribute_not_exists(#limit) OR #total < #limit) AND ((attribute_not_exists(#ceil) AND #total < :ceiling) OR #total < #ceil))';

export interface AcquireOptions {
  /** A `"queue": true` call: refused (so it waits) while other calls of the organization wait. */
  unlessWaiting?: boolean;
  /** A waiting call placed (calls/queued-calls.ts): it leaves the waiting count in the same write. */
  fromQueue?: boolean;
}

/**
 * The writes that put a new call in the organization's queue instead of a slot (`"queue": true`
 * at the limit): its FIFO entry (`CALLWAIT#<call id>`: ids are UUID v7, so the entries sort by
 * creation) and `ADD queued 1` on the counter, conditioned on the organization still being at its
 * limit or having calls waiting already. The counter is the item every slot's release writes too,
 * so a slot freed between the refusal and this write fails the condition (the caller tries for a
 * slot again) or comes after it (and that release's promotion sees the call waiting): a call never
 * waits while a slot is free and none is waiting.
 */
export function waitWrites(orgId: string, callId: string, now: string): TransactItem[] {
  return [
    putNew({ ...keys.callWaiting(orgId, callId), entity: WAITING_ENTITY, organization_id: orgId, call_id: callId, waiting_since: now }),
    {
      Update: {
        TableName: tableName(),
        Key: keys.concurrency(orgId),
        UpdateExpression: 'ADD #queued :one',
        ConditionExpression: `#queued >= :one OR NOT (${BELOW_LIMIT})`,
        ExpressionAttributeNames: { '#total': 'total', '#limit': 'limit', '#ceil': 'ceiling', '#queued': 'queued' },
        ExpressionAttributeValues: { ':one': 1, ':ceiling': config().concurrencyCeiling },
      },
    },
  ];
}

/** The writes that take a waiting call out of the queue without a slot (it ended waiting): its entry's delete and `ADD queued -1`. */
export function leaveQueueWrites(orgId: string, callId: string): TransactItem[] {
  return [
    deleteExisting(keys.callWaiting(orgId, callId)),
    counterDecrement(orgId, ['queued']),
  ];
}

/** The counter's unconditional `ADD -1` of the named counts (the item each decrement pairs with is deleted in the same transaction, conditioned on it existing). */
function counterDecrement(orgId: string, counts: string[]): TransactItem {
  return {
    Update: {
      TableName: tableName(),
      Key: keys.concurrency(orgId),
      UpdateExpression: `ADD ${counts.map((_, i) => `#c${i} :minus`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(counts.map((c, i) => [`#c${i}`, c])),
      ExpressionAttributeValues: { ':minus': -1 },
    },
  };
}

export const WAITING_ENTITY = 'CALL_WAITING';

/** The organization's first waiting call (the FIFO's head), or undefined. */
export async function waitingHead(orgId: string): Promise<{ call_id: string } | undefined> {
  const [head] = await queryRange<{ call_id: string }>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.callWaiting, consistent: true }, 1);
  return head;
}

/**
 * A waiting call's place in its organization's queue (1: placed next): the entries up to its own,
 * counted (Select COUNT over the FIFO's keys, at most the calls waiting ahead of it).
 */
export function queuePosition(orgId: string, callId: string): Promise<number> {
  return countRange({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skFrom: Prefix.callWaiting, skTo: keys.callWaiting(orgId, callId).sk, consistent: true });
}

/** The writes that free a call's slot: the slot's delete (only if it is there) and the counter's decrement. */
export function releaseSlotWrites(orgId: string, callId: string, kind: SlotKind): TransactItem[] {
  return [
    deleteExisting(keys.concurrencySlot(orgId, callId)),
    counterDecrement(orgId, ['total', kind]),
  ];
}

/** The index of the write whose condition cancelled a transaction (ConditionFailed from `transact`), or -1. */
export function failedWrite(err: ConditionFailed): number {
  const cause = err.cause;
  if (!(cause instanceof TransactionCanceledException)) return -1;
  return (cause.CancellationReasons ?? []).findIndex((r) => r.Code === 'ConditionalCheckFailed');
}

/** The organization's counter item (strongly consistent). */
export const readConcurrency = (orgId: string) => getItem<ConcurrencyItem>(keys.concurrency(orgId));

/** The 429 for an organization at its limit, with the limit and live calls read now. */
export async function limitReached(orgId: string): Promise<ConcurrencyLimitError> {
  const item = await readConcurrency(orgId);
  const { limit } = limitsOf(item);
  return new ConcurrencyLimitError(limit, Math.max(0, item?.total ?? 0), RETRY_AFTER_SECONDS);
}

/**
 * Runs the transaction that puts a new call with its slot (`acquire` from acquireSlotWrites,
 * appended last). The limit refusing it throws ConcurrencyLimitError (429); another write's
 * condition throws ConditionFailed as `transact` does.
 */
export async function transactWithSlot(orgId: string, main: TransactItem[], acquire: TransactItem[], counters: CounterDelta[] = []): Promise<void> {
  try {
    await transact([...main, ...acquire], counters);
  } catch (err) {
    if (err instanceof ConditionFailed && failedWrite(err) === main.length) throw await limitReached(orgId);
    throw err;
  }
}

/**
 * The recovery sweep's step for a slot found due: its call ended (or never existed: a holder that
 * crashed) → the slot is released (once: the delete is conditioned on the slot); its call still
 * live → the slot moves on to SLOT_GRACE_MS after the call's due time. Answers whether it released
 * the slot, and when the slot is due next when it stays.
 */
export async function recoverSlot(slot: SlotItem, now: string): Promise<{ released: boolean; movedTo?: string }> {
  const call = await getItem<{ status: string; due_at?: string }>(keys.call(slot.organization_id, slot.call_id));
  if (!call || call.status === 'ended') {
    let released = true;
    await transact(releaseSlotWrites(slot.organization_id, slot.call_id, slot.kind)).catch((err) => {
      released = false;
      ignoreConditionFailed(err); // released meanwhile (the call's own end, another sweep)
    });
    return { released };
  }
  const base = call.due_at && call.due_at > now ? call.due_at : now;
  const movedTo = laterBy(base, SLOT_GRACE_MS);
  await transact([updateExisting(keys.concurrencySlot(slot.organization_id, slot.call_id), slotDue(slot.organization_id, slot.call_id, movedTo))]).catch(ignoreConditionFailed);
  return { released: false, movedTo };
}

import { queue } from '../../adapters/queue';
import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { ConditionFailed, getItem, ignoreConditionFailed, transact, updateExisting } from '../../db/store';
import { logger } from '../../logger';
import { pause } from '../../db/retry';
import { acquireSlotWrites, failedWrite, leaveQueueWrites, limitsOf, readConcurrency, slotKindOf, waitingHead } from '../concurrency/slots';
import { dueEntry, isWaiting, RECOVERY_MARGIN_MS, waitingDue, type CallItem } from './service';

/**
 * Calls that wait for a concurrency slot (`"queue": true` at the limit; docs/api.md, "Concurrency
 * limits"). A waiting call is a `queued` call without a slot, with `waiting_until` (its deadline),
 * a FIFO entry `CALLWAIT#<id>` in its organization's partition and a count in the counter's
 * `queued` (concurrency/slots.ts waitWrites). It leaves the queue one of two ways, each one
 * transaction conditioned on the call still waiting, so exactly once:
 *
 * - placed (promoteWaiting): the oldest waiting call of the organization takes a slot (the
 *   counter's conditional `ADD total 1, queued -1`), loses `waiting_until` and its entry, and is
 *   sent to call-place. Run when a slot is released (lifecycle.ts moveCall, after an end) and by
 *   the recovery sweep (a release whose promotion was lost);
 * - ended (`queue_timeout` at its deadline, by the recovery sweep; moveCall deletes the entry and
 *   the count with the end).
 */

/**
 * Ends a waiting call past its deadline `queue_timeout` (lifecycle.ts expireWaiting: given by the
 * callers, which may import the state machine this module's importer is).
 */
export type ExpireWaiting = (call: CallItem) => Promise<unknown>;

/** Calls placed per promotion at most (a run stops earlier at the limit or an empty queue). */
const PROMOTE_BUDGET = 25;

/**
 * Places the organization's oldest waiting calls into its free slots, first in first out. One
 * GetItem when none waits. Answers how many it placed.
 */
export async function promoteWaiting(orgId: string, expire: ExpireWaiting): Promise<number> {
  let placed = 0;
  for (let round = 0; round < PROMOTE_BUDGET; round++) {
    const counter = await readConcurrency(orgId);
    if ((counter?.queued ?? 0) <= 0) return placed;
    if ((counter?.total ?? 0) >= limitsOf(counter).limit) return placed;
    const head = await waitingHead(orgId);
    if (!head) return placed;
    const call = await getItem<CallItem>(keys.call(orgId, head.call_id));
    if (!call || !isWaiting(call)) {
      // An entry whose call is gone (never so while calls are only ended, kept): dropped with its count.
      if (!call) await transact(leaveQueueWrites(orgId, head.call_id)).catch(ignoreConditionFailed);
      else logger.warn('A waiting call\'s queue entry outlived its wait', { call_id: head.call_id });
      if (call) return placed;
      continue;
    }
    const now = clockNow().toISOString();
    if (call.waiting_until! <= now) {
      // Past its deadline (the sweep has not come by yet): it ends `queue_timeout`, never placed late.
      await expire(call);
      continue;
    }
    const kind = slotKindOf(call);
    const due = dueEntry(orgId, call.id, new Date(Date.parse(now) + call.ring_duration_ms + call.max_call_duration_ms + RECOVERY_MARGIN_MS).toISOString());
    const writes = [
      updateExisting(keys.call(orgId, call.id), { slot_kind: kind, updated_at: now, ...due }, {
        remove: ['waiting_until'],
        condition: '#st = :queued AND #wait > :now',
        names: { '#st': 'status', '#wait': 'waiting_until' },
        values: { ':queued': 'queued', ':now': now },
      }),
      leaveQueueWrites(orgId, call.id)[0]!,
      ...acquireSlotWrites(orgId, call.id, kind, due.due_at, now, { fromQueue: true }),
    ];
    try {
      await transact(writes);
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (failedWrite(err) === 2) return placed; // the limit: no slot free after all
      continue; // placed, ended or past its deadline meanwhile (another promotion, the sweep): look at the head again
    }
    placed++;
    await sendPlacement(orgId, call.id);
  }
  return placed;
}

/**
 * The placed call to call-place. No client waits to retry it (as one does a failed POST /calls), so
 * a send that fails after the SDK's own retries is tried again a few times; if every try fails the
 * call stays queued with its slot, and the recovery sweep ends it `failed` when due.
 */
async function sendPlacement(orgId: string, callId: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await queue().send('call-place', { organization_id: orgId, call_id: callId });
    } catch (err) {
      if (attempt >= SEND_ATTEMPTS) throw err;
      logger.warn('A waiting call\'s placement could not be queued; trying again', { call_id: callId, attempt, error: err as Error });
      await pause(attempt);
    }
  }
}
const SEND_ATTEMPTS = 4;

/** The recovery sweep's look at a waiting call found due: the organization's queue promoted, and the call moved on to its next check (or its deadline). */
export async function recheckWaiting(call: CallItem, now: string, expire: ExpireWaiting): Promise<string | undefined> {
  await promoteWaiting(call.organization_id, expire);
  const next = waitingDue(call.organization_id, call.id, now, call.waiting_until!);
  await transact([
    updateExisting(keys.call(call.organization_id, call.id), next, { condition: '#st = :queued AND attribute_exists(#wait)', names: { '#st': 'status', '#wait': 'waiting_until' }, values: { ':queued': 'queued' } }),
  ]).catch(ignoreConditionFailed); // placed meanwhile: its due entry is its live call's now
  return next.due_at;
}

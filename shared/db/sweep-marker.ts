import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { db, tableName } from './client';
import { keys } from './keys';
import { getItem } from './store';

/**
 * A minute sweep's "next due" marker: one item per sweep (`SWEEP#<name>`) whose `next_due_at`
 * is a lower bound of every entry of the sweep's sparse index. A minute whose marker is still
 * in the future costs one GetItem and nothing else (docs/operations.md, "What the minute sweeps
 * read"). The marker is kept by three writes, none in a hot path's transaction:
 *
 * - `noteDue(sweep, at)`: a writer that put an entry due at `at`, after its write committed,
 *   lowers the marker to `at` when it is later (a conditional update that changes nothing when
 *   the marker is already earlier). Writers whose entries are always due a known lead after the
 *   write (the sweep's `leadMs`) need not call it.
 * - `armSweep`: a sweep that runs first sets the marker to its horizon, THEN reads its index. A
 *   writer whose entry committed before that read is seen by the read; one that committed after
 *   it lowers the marker the sweep set (it is later than the writer's entry, or the entry is
 *   beyond the horizon). So no entry is ever above the marker.
 * - `settleSweep`: the sweep lowers the marker to the earliest entry it left (not due yet, or
 *   due and not handled: then the next minute runs again).
 *
 * A marker that is missing (a new table) means "run". Deployed, a global index is eventually
 * consistent: an entry committed in the instant before a sweep's read may be missed by that
 * read; it is found at the marker's horizon at the latest (each sweep's horizon is documented).
 */
export type SweepName = 'call-recovery' | 'chat-sweep' | 'webhook-sweep' | 'campaign-tick';

interface MarkerItem {
  next_due_at?: string;
  /** When the last sweep that handled everything due ran (a sweep may read its index from there on). */
  swept_through?: string;
}

/** The sweep's marker (`next_due_at`, ISO), or undefined when it has none yet. One strongly consistent GetItem. */
export async function sweepMarker(sweep: SweepName): Promise<string | undefined> {
  return (await getItem<MarkerItem>(keys.sweepMarker(sweep)))?.next_due_at;
}

/**
 * Whether the sweep has work by `now` (ISO): its marker is missing or not in the future. A marker
 * further ahead than the sweep's own horizon cannot have been set by a clock that only moves
 * forward (a clock set back, a restored table): it is not trusted, the sweep runs.
 */
export async function sweepDue(sweep: SweepName, now: string, horizonMs: number): Promise<{ due: boolean; marker?: string; sweptThrough?: string }> {
  const item = await getItem<MarkerItem>(keys.sweepMarker(sweep));
  const marker = item?.next_due_at;
  const trusted = marker !== undefined && Date.parse(marker) <= Date.parse(now) + horizonMs;
  const sweptThrough = trusted && item?.swept_through && item.swept_through <= now ? item.swept_through : undefined;
  return { due: !trusted || marker! <= now, ...(marker ? { marker } : {}), ...(sweptThrough ? { sweptThrough } : {}) };
}

/** Records that a sweep handled every entry due by `at` (ISO); undefined forgets it (the next sweep reads its whole range). */
export async function recordSweptThrough(sweep: SweepName, at: string | undefined): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.sweepMarker(sweep),
      UpdateExpression: at ? 'SET swept_through = :at' : 'REMOVE swept_through',
      ...(at ? { ExpressionAttributeValues: { ':at': at } } : {}),
    }),
  );
}

/** Before a sweep reads its index: the marker moves to the sweep's horizon (see the module comment). */
export async function armSweep(sweep: SweepName, horizon: string): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.sweepMarker(sweep),
      UpdateExpression: 'SET next_due_at = :h',
      ExpressionAttributeValues: { ':h': horizon },
    }),
  );
}

/**
 * Lowers the sweep's marker to `dueAt` (ISO) when it is later or missing; a marker already at or
 * before `dueAt` is left as it is. Called after the write of an entry due at `dueAt` committed.
 */
export async function noteDue(sweep: SweepName, dueAt: string): Promise<void> {
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.sweepMarker(sweep),
        UpdateExpression: 'SET next_due_at = :d',
        ConditionExpression: 'attribute_not_exists(next_due_at) OR next_due_at > :d',
        ExpressionAttributeValues: { ':d': dueAt },
      }),
    );
  } catch (err) {
    if (!(err instanceof ConditionalCheckFailedException) && (err as Error).name !== 'ConditionalCheckFailedException') throw err;
  }
}

/** After a sweep: the marker falls to the earliest entry the sweep left (undefined: none before its horizon). */
export async function settleSweep(sweep: SweepName, earliestLeft: string | undefined): Promise<void> {
  if (earliestLeft) await noteDue(sweep, earliestLeft);
}

/** The earlier of two optional ISO times. */
export const earlier = (a: string | undefined, b: string | undefined): string | undefined => (!a ? b : !b ? a : a < b ? a : b);

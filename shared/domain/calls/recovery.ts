import { clockNow } from '../../clock';
import { gsi2, type Key } from '../../db/keys';
import { getItem, queryAll } from '../../db/store';
import { logger } from '../../logger';
import { endMove, finalize, moveCall } from './lifecycle';
import { CALL_DUE_SHARDS, type CallItem } from './service';
import { VOICE_LOST_MESSAGE, type VoiceFields } from './voice-session';

const voiceLost = (item: CallItem & VoiceFields) => !!item.voice_stream_at && !item.voice_recorded_at;

/**
 * The recovery sweep (call-recovery, every minute): ends `failed` every call that never got a
 * final carrier event by its due time: created + ring + maximum duration + RECOVERY_MARGIN_MS
 * while not answered, answered + maximum duration + margin once answered. It reads the sparse
 * calls-due index on gsi2 (hour partitions × CALL_DUE_SHARDS, from `lookbackHours` ago to now),
 * never a Scan; each entry's call is read consistently and ended through the state machine, so
 * an event that ends it at the same moment wins or loses cleanly. An ended call keeps its entry
 * (due FINALIZE_GRACE_MS after the end) until its after-end steps are done; the sweep finishes
 * those steps when the path that ended the call could not (a failure where no queue retries). A call that was answered is
 * charged for the time from its answer to the sweep, capped at its maximum duration.
 */
export const DEFAULT_LOOKBACK_HOURS = 6;
const MAX_LOOKBACK_HOURS = 24 * 14;
const CONCURRENCY = 10;

export interface RecoverySummary {
  now: string;
  found: number;
  ended: number;
  /** Ended calls whose after-end steps the sweep finished. */
  finalized: number;
  failed: number;
}

export async function runCallRecovery(options: { now?: Date; lookbackHours?: number } = {}): Promise<RecoverySummary> {
  const now = (options.now ?? clockNow()).toISOString();
  const lookback = Math.min(MAX_LOOKBACK_HOURS, Math.max(0, Math.floor(options.lookbackHours ?? DEFAULT_LOOKBACK_HOURS)));
  const summary: RecoverySummary = { now, found: 0, ended: 0, finalized: 0, failed: 0 };
  const endOne = async (key: Key) => {
    const item = await getItem<CallItem>(key);
    if (!item || !item.due_at || item.due_at > now) return false;
    if (item.status === 'ended') {
      // Ended, but its after-end steps (contact history, campaign outcome, analysis) never finished.
      if (item.finalized_at) return false;
      await finalize(item);
      summary.finalized++;
      return false;
    }
    const answeredMs = item.answered_at ? Date.parse(item.answered_at) : undefined;
    const durationSec = answeredMs !== undefined ? Math.min(item.max_call_duration_ms, Date.parse(now) - answeredMs) / 1000 : 0;
    const result = await moveCall(item, endMove('failed'), {
      at: now,
      durationSec,
      // A call whose voice stream was admitted but never recorded lost its runtime (a restart mid-call).
      errorMessage: `${voiceLost(item) ? `${VOICE_LOST_MESSAGE}. ` : ''}No final status from the carrier by ${item.due_at}; ended by the recovery sweep`,
    });
    return result.moved;
  };
  let batch: Key[] = [];
  const flush = async () => {
    const results = await Promise.allSettled(batch.map(endOne));
    results.forEach((r, i) => {
      if (r.status === 'fulfilled') summary.ended += r.value ? 1 : 0;
      else {
        summary.failed++;
        logger.error('A stuck call could not be ended; the next sweep retries it', { key: batch[i], error: r.reason as Error });
      }
    });
    batch = [];
  };
  const nowMs = Date.parse(now);
  for (let h = lookback; h >= 0; h--) {
    const hour = new Date(nowMs - h * 3600_000).toISOString().slice(0, 13);
    for (let shard = 0; shard < CALL_DUE_SHARDS; shard++) {
      // Everything due by now sorts below `<now>$` ('$' follows '#').
      const entries = queryAll<Key>({ index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.callsDue(hour, shard), skName: 'gsi2sk', skBelow: `${now}$` }, ['pk', 'sk']);
      for await (const entry of entries) {
        summary.found++;
        batch.push({ pk: entry.pk, sk: entry.sk });
        if (batch.length >= CONCURRENCY) await flush();
      }
    }
  }
  await flush();
  if (summary.found) logger.info('Call recovery sweep', { ...summary });
  if (summary.failed) throw new Error(`Call recovery: ${summary.failed} call(s) could not be ended; the next run retries them`);
  return summary;
}


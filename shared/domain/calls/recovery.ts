import { hangUpTimedOut } from './inbound-overflow';
import { clockNow } from '../../clock';
import { gsi2, type Key } from '../../db/keys';
import { getItem, queryPage } from '../../db/store';
import { logger } from '../../logger';
import { armSweep, earlier, recordSweptThrough, settleSweep, sweepDue } from '../../db/sweep-marker';
import { endMove, expireWaiting, finalize, FINALIZE_GRACE_MS, moveCall } from './lifecycle';
import { CALL_DUE_SHARDS, isWaiting, type CallItem } from './service';
import { recheckWaiting } from './queued-calls';
import { VOICE_LOST_MESSAGE, type VoiceFields } from './voice-session';
import { superviseTransfers } from './warm-transfer';
import { lostRelayConversation, recoverRelaySession } from '../relay/recovery';
import type { RelayDue } from '../relay/state';
import { recoverSlot, SLOT_ENTITY, type SlotItem } from '../concurrency/slots';

const voiceLost = (item: CallItem & VoiceFields) => !!item.voice_stream_at && !item.voice_recorded_at;

/**
 * The recovery sweep (call-recovery, every minute): ends `failed` every call that never got a
 * final carrier event by its due time: created + ring + maximum duration + RECOVERY_MARGIN_MS
 * while not answered, answered + maximum duration + margin once answered. It reads the sparse
 * calls-due index on gsi2 (hour partitions × CALL_DUE_SHARDS), never a Scan; each entry's call is
 * read consistently and ended through the state machine, so an event that ends it at the same
 * moment wins or loses cleanly. An ended call keeps its entry (due FINALIZE_GRACE_MS after the
 * end) until its after-end steps are done; the sweep finishes those steps when the path that
 * ended the call could not (a failure where no queue retries). A call that was answered is
 * charged for the time from its answer to the sweep, capped at its maximum duration.
 *
 * A live call with warm transfers (warm-transfer.ts) falls due at its first pending transfer's
 * deadline too: the sweep settles a stalled transfer by the carrier's word (GET the person's
 * call) and brings the caller back, retries a send-back that failed, and asks the carrier about a
 * call past its limit before ending it (a call a person took lasts up to the carrier's 4 hours;
 * one the carrier ended ends with its real status and duration).
 *
 * The index also holds relay connections (their `$disconnect` best effort): one found due with no
 * prompt for RELAY_SESSION_DUE_MS is a session that ended without it, whose conversation the sweep
 * writes onto the call from its turns (relay/recovery.ts); a relay call the sweep ends takes its
 * conversation from its turns too.
 *
 * A call waiting for a concurrency slot (`"queue": true`, queued-calls.ts) falls due every
 * WAITING_CHECK_MS and at its deadline: the sweep places its organization's oldest waiting calls
 * into free slots (a release whose promotion was lost), and ends it `queue_timeout` at its deadline.
 *
 * The index holds concurrency slots too (concurrency/slots.ts), due a grace after their call: a
 * slot whose call ended or never existed (a holder that crashed) is freed, once; one whose call
 * still lives moves on.
 *
 * An idle minute is one GetItem: the sweep's marker (shared/db/sweep-marker.ts) says when the
 * earliest entry falls due; a new call lowers it (createCall, inbound calls). A call's entry that
 * moves EARLIER later on (its answer, its end) does not: it is found no later than the due time it
 * had, which the marker already covers. When the marker has come, the sweep reads the hours from
 * the last sweep that handled everything due (at most `lookbackHours` back) to the horizon
 * (RECOVERY_HORIZON_MS ahead), and leaves the marker at the earliest entry it did not end.
 */
export const DEFAULT_LOOKBACK_HOURS = 6;
const MAX_LOOKBACK_HOURS = 24 * 14;
/** How far ahead a sweep looks for the next entry (the marker's horizon when the index is empty). */
export const RECOVERY_HORIZON_MS = 3600_000;
const CONCURRENCY = 10;
/** How far before the last complete sweep a sweep reads again: an entry the index showed late (a global index lags) or a clock a little behind. */
const SWEPT_MARGIN_MS = 10 * 60_000;
/** Entries read per page of one hour partition. */
const PAGE = 50;

export interface RecoverySummary {
  now: string;
  /** False when the marker said nothing was due (one read). */
  ran: boolean;
  found: number;
  ended: number;
  /** Ended calls whose after-end steps the sweep finished. */
  finalized: number;
  /** Relay sessions whose `$disconnect` never came: their conversation written onto the call. */
  relaySessions: number;
  /** Concurrency slots freed because their call had ended or never existed (concurrency/slots.ts). */
  slotsRecovered: number;
  failed: number;
}

const hourOf = (ms: number) => new Date(ms).toISOString().slice(0, 13);

/** A manual invoke's `lookbackHours` always reads the whole range, whatever the marker says. */
export async function runCallRecovery(options: { now?: Date; lookbackHours?: number } = {}): Promise<RecoverySummary> {
  const now = (options.now ?? clockNow()).toISOString();
  const nowMs = Date.parse(now);
  const forced = options.lookbackHours !== undefined;
  const lookback = Math.min(MAX_LOOKBACK_HOURS, Math.max(0, Math.floor(options.lookbackHours ?? DEFAULT_LOOKBACK_HOURS)));
  const summary: RecoverySummary = { now, ran: false, found: 0, ended: 0, finalized: 0, relaySessions: 0, slotsRecovered: 0, failed: 0 };
  const gate = await sweepDue('call-recovery', now, RECOVERY_HORIZON_MS);
  if (!gate.due && !forced) return summary;
  summary.ran = true;
  const horizon = new Date(nowMs + RECOVERY_HORIZON_MS).toISOString();
  await armSweep('call-recovery', horizon);
  let earliestLeft: string | undefined;

  const endOne = async (key: Key) => {
    const item = await getItem<CallItem>(key);
    if (!item || !item.due_at) return false;
    if (item.due_at > now) {
      earliestLeft = earlier(earliestLeft, item.due_at); // moved since the index was read
      return false;
    }
    if ((item as { entity?: string }).entity === SLOT_ENTITY) {
      // A concurrency slot past its call's due time: freed if the call ended or never existed (a crashed holder), else moved on.
      const { released, movedTo } = await recoverSlot(item as unknown as SlotItem, now);
      if (movedTo) earliestLeft = earlier(earliestLeft, movedTo);
      if (released) summary.slotsRecovered++;
      return false;
    }
    if ((item as { entity?: string }).entity === 'RELAY_DUE') {
      // A relay connection whose $disconnect never came: its conversation onto the call, or later when it may live (relay/recovery.ts).
      const { movedTo } = await recoverRelaySession(item as unknown as RelayDue, now);
      if (movedTo) earliestLeft = earlier(earliestLeft, movedTo);
      else summary.relaySessions++;
      return false;
    }
    if (item.status !== 'ended' && item.transfers?.some((t) => t.mode === 'warm')) {
      // Warm transfers: a stalled one settled by the carrier's word, a send-back retried, a call past its limit asked of the carrier first (warm-transfer.ts).
      const watched = await superviseTransfers(item, now);
      if (watched) {
        if (watched.dueAt) earliestLeft = earlier(earliestLeft, watched.dueAt);
        return !!watched.ended;
      }
    }
    if (isWaiting(item)) {
      // A call waiting for a concurrency slot (queued-calls.ts): its organization's queue promoted (a
      // release whose promotion was lost) and the call looked at again, or at its deadline ended `queue_timeout`.
      if (item.waiting_until! > now) {
        earliestLeft = earlier(earliestLeft, await recheckWaiting(item, now, expireWaiting));
        return false;
      }
      const result = await expireWaiting(item);
      // A caller on hold (their number's overflow) hears the apology and is hung up.
      if (result.moved) await hangUpTimedOut(result.item);
      return result.moved;
    }
    if (item.status === 'ended') {
      // Ended, but its after-end steps (contact history, campaign outcome, analysis) never finished.
      if (item.finalized_at) return false;
      await finalize(item);
      summary.finalized++;
      return false;
    }
    const answeredMs = item.answered_at ? Date.parse(item.answered_at) : undefined;
    const durationSec = answeredMs !== undefined ? Math.min(item.max_call_duration_ms, nowMs - answeredMs) / 1000 : 0;
    // A relay call keeps its conversation in its turns until its session's end writes it: the end takes it from there.
    const relay = voiceLost(item) ? await lostRelayConversation(item.id) : undefined;
    const result = await moveCall(item, endMove('failed'), {
      at: now,
      durationSec,
      ...(relay ? { transcript: relay.transcript, toolCalls: relay.toolCalls } : {}),
      // A call whose voice stream was admitted but never recorded lost its runtime (a restart mid-call).
      errorMessage: `${voiceLost(item) && !relay ? `${VOICE_LOST_MESSAGE}. ` : ''}No final status from the carrier by ${item.due_at}; ended by the recovery sweep`,
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

  // From the last sweep that handled everything due (every entry is written due no earlier than its
  // write, so nothing due before that sweep appeared since), else `lookback` hours back, to the horizon's hour.
  const fullFromMs = nowMs - lookback * 3600_000;
  const fromMs = !forced && gate.sweptThrough ? Math.max(fullFromMs, Date.parse(gate.sweptThrough) - SWEPT_MARGIN_MS) : fullFromMs;
  const hours: string[] = [];
  for (let ms = Date.parse(`${hourOf(fromMs)}:00:00.000Z`); ms <= nowMs + RECOVERY_HORIZON_MS; ms += 3600_000) hours.push(hourOf(ms));
  for (const hour of hours) {
    for (let shard = 0; shard < CALL_DUE_SHARDS; shard++) {
      const range = { index: gsi2.name, pkName: 'gsi2pk', pkValue: gsi2.callsDue(hour, shard), skName: 'gsi2sk', skBelow: `${horizon}$` };
      // Entries sort by due time: everything due by now, then the first one not due yet (the next marker).
      let cursor: string | undefined;
      let pastNow = false;
      do {
        const page = await queryPage<Key & { gsi2sk: string }>(range, { limit: hour > hourOf(nowMs) ? 1 : PAGE, ...(cursor ? { cursor } : {}) });
        for (const entry of page.items) {
          const dueAt = entry.gsi2sk.slice(0, entry.gsi2sk.indexOf('#'));
          if (dueAt > now) {
            earliestLeft = earlier(earliestLeft, dueAt);
            pastNow = true;
            break;
          }
          summary.found++;
          batch.push({ pk: entry.pk, sk: entry.sk });
          if (batch.length >= CONCURRENCY) await flush();
        }
        cursor = page.nextCursor ?? undefined;
      } while (cursor && !pastNow && hour <= hourOf(nowMs));
    }
  }
  await flush();
  // A call the sweep could not end stays due: the next minute tries again. One it ended keeps its
  // entry until its after-end steps are done, due FINALIZE_GRACE_MS from now.
  if (summary.failed) earliestLeft = now;
  else if (summary.ended) earliestLeft = earlier(earliestLeft, new Date(nowMs + FINALIZE_GRACE_MS).toISOString());
  await settleSweep('call-recovery', earliestLeft);
  await recordSweptThrough('call-recovery', summary.failed ? undefined : now);
  if (summary.found) logger.info('Call recovery sweep', { ...summary });
  if (summary.failed) throw new Error(`Call recovery: ${summary.failed} call(s) could not be ended; the next run retries them`);
  return summary;
}

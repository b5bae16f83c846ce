import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { queue } from '../../adapters/queue';
import { collections, keys } from '../../db/keys';
import { ConditionFailed, getItem, transact } from '../../db/store';
import { getKeyed } from '../../db/filtered-query';
import { clockNow } from '../../clock';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { updateWrite } from '../../db/update';
import { dispatchEvents, newEvent } from '../events/publish';
import type { CampaignCallOutcome } from './dial-port';
import { campaignView, contactStatusIndex, dueIndex, statusIndex, type CampaignContactItem, type CampaignItem } from './model';
import type { CampaignContactStatus } from './schemas';
import { noteDue } from '../../db/sweep-marker';

/**
 * The campaign engine's outcome side: what an ended call makes of its campaign contact, and how a
 * campaign settles (completes, or records whether it dials or waits for its window). The calls
 * service reports ends here (../calls/campaign-calls.ts); the dispatching side (./engine.ts)
 * places calls through the dialer (./dialer.ts) and uses the back-off and settling below. Apart
 * from engine.ts so that neither the dialer nor the calls service imports the engine that
 * imports them.
 */

/** A `campaign-dispatch` message (the tick, a start, an outcome queue one per campaign). */
export interface DispatchMessage {
  organization_id: string;
  campaign_id: string;
  /** Queued by the tick (or continuing one it queued): the dispatch lowers the tick's marker to what it leaves (engine.ts). */
  tick?: boolean;
  /**
   * Queued by an outcome: it does not read the campaign's leases (a lease left by a worker that
   * died is the tick's: its marker falls to it), one Query less per call.
   */
  outcome?: boolean;
}

const iso = (d: Date) => d.toISOString();
const campaignKey = (orgId: string, id: string) => keys.campaign(orgId, id);
const contactKey = (orgId: string, campaignId: string, id: string) => keys.campaignContact(orgId, campaignId, id);

/** Which items of a failed transaction had their condition fail. */
export function failedItems(err: unknown): number[] {
  const cause = err instanceof ConditionFailed ? (err as Error & { cause?: unknown }).cause : err;
  if (!(cause instanceof TransactionCanceledException)) return [];
  return (cause.CancellationReasons ?? []).flatMap((r, i) => (r.Code === 'ConditionalCheckFailed' ? [i] : []));
}

/** Queues a dispatch of one campaign (the tick, a start, an outcome). */
export async function queueDispatch(orgId: string, campaignId: string, from: 'tick' | 'outcome' | 'other' = 'other'): Promise<void> {
  await queue().send('campaign-dispatch', {
    organization_id: orgId, campaign_id: campaignId, ...(from === 'tick' ? { tick: true } : from === 'outcome' ? { outcome: true } : {}),
  } satisfies DispatchMessage);
}

/** The first back-off after a placement that did not reach the carrier; it doubles on each one in a row. */
const BACKOFF_BASE_MS = 60_000;
const BACKOFF_MAX_MS = 30 * 60_000;
/** Attempts the carrier never dialed that do not count against `retry_attempts`, per contact; later ones count. */
export const MAX_UNDIALED = 8;

/**
 * The calling-window rules (and luxon with them), imported when a retry is due: every call's
 * lifecycle reaches this module, and most calls are not campaign retries (a chat or widget
 * function that loaded them at start paid ~70 KB of parsing on every cold start).
 */
const windowRules = () => import('./window');

/** When a contact whose placement failed `failures` times in a row is due again: 1, 2, 4 … 30 minutes on, in its window. */
export async function backoffDue(campaign: CampaignItem, cc: CampaignContactItem, now: Date, failures: number): Promise<string> {
  const { nextOpening } = await windowRules();
  const delay = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.max(0, failures - 1));
  const opening = nextOpening(campaign.schedule, new Date(now.getTime() + delay), cc.timezone);
  return iso(opening ?? new Date('9999-12-31T00:00:00.000Z'));
}

/**
 * After a dispatch or an outcome: completes a running campaign with nothing pending or in
 * progress (conditioned on those live counters, so it happens once), else records whether it
 * is placing calls or waiting for its window.
 */
export async function settle(orgId: string, campaignId: string): Promise<void> {
  const campaign = await getItem<CampaignItem>(campaignKey(orgId, campaignId));
  if (!campaign) return;
  if (campaign.status !== 'running') return retireIfDone(orgId, campaignId, campaign);
  const stats = campaign.contact_stats;
  if (stats.pending === 0 && stats.in_progress === 0) return complete(campaign);
  const execution = stats.in_progress > 0 ? 'dispatching' : 'waiting_window';
  if (campaign.execution_status === execution) return;
  await transact([
    updateWrite(campaignKey(orgId, campaignId), {
      set: { execution_status: execution },
      condition: '#st = :running',
      names: { '#st': 'status' },
      values: { ':running': 'running' },
    }),
  ]).catch((err) => {
    if (!(err instanceof ConditionFailed)) throw err;
  });
}

async function complete(campaign: CampaignItem): Promise<void> {
  const orgId = campaign.organization_id;
  const now = clockNow();
  const after = { ...campaign, status: 'completed' as const, execution_status: 'done' as const, completed_at: iso(now), updated_at: iso(now) };
  const event = newEvent(orgId, 'campaign.completed', campaignView(after) as unknown as Record<string, unknown>, now);
  try {
    await transact(
      [
        updateWrite(campaignKey(orgId, campaign.id), {
          set: { status: 'completed', execution_status: 'done', completed_at: after.completed_at, updated_at: after.updated_at, ...statusIndex(orgId, campaign.id, 'completed') },
          remove: ['gsi2pk', 'gsi2sk'],
          add: { version: 1 },
          condition: '#st = :running AND #cs.#p = :zero AND #cs.#ip = :zero',
          names: { '#st': 'status', '#cs': 'contact_stats', '#p': 'pending', '#ip': 'in_progress' },
          values: { ':running': 'running', ':zero': 0 },
        }),
        updateWrite(keys.phoneNumber(orgId, campaign.phone_number_id), { add: { in_use: -1 } }),
        event.write,
      ],
      [
        { orgId, collection: collections.campaignsByStatus('running'), delta: -1 },
        { orgId, collection: collections.campaignsByStatus('completed'), delta: 1 },
      ],
    );
  } catch (err) {
    if (err instanceof ConditionFailed) return; // completed by another worker, or a contact came back
    throw err;
  }
  await dispatchEvents([event.event]);
}

/** A cancelled campaign leaves the engine's index once its last call has ended. */
export async function retireIfDone(orgId: string, campaignId: string, known?: CampaignItem): Promise<void> {
  const campaign = known ?? (await getItem<CampaignItem>(campaignKey(orgId, campaignId)));
  if (!campaign || campaign.status !== 'completed' || !campaign.gsi2pk || campaign.contact_stats.in_progress !== 0) return;
  await transact([
    updateWrite(campaignKey(orgId, campaignId), {
      remove: ['gsi2pk', 'gsi2sk'],
      condition: '#st = :completed AND #cs.#ip = :zero',
      names: { '#st': 'status', '#cs': 'contact_stats', '#ip': 'in_progress' },
      values: { ':completed': 'completed', ':zero': 0 },
    }),
  ]).catch((err) => {
    if (!(err instanceof ConditionFailed)) throw err;
  });
}

/** What an ended call makes of a campaign contact. */
function classify(outcome: CampaignCallOutcome): { status: Exclude<CampaignContactStatus, 'pending' | 'in_progress'>; retryable: boolean; message: string } {
  switch (outcome.disconnectionReason) {
    case 'completed':
      return outcome.answered ? { status: 'successful', retryable: false, message: '' } : { status: 'no_answer', retryable: true, message: '' };
    case 'no_answer':
    case 'busy':
    case 'voicemail':
      return { status: 'no_answer', retryable: true, message: '' };
    case 'failed':
      return { status: 'failed', retryable: true, message: 'call failed' };
    case 'canceled':
      return { status: 'failed', retryable: false, message: outcome.errorMessage || 'call canceled' };
  }
}

/**
 * Records how a campaign call ended (the calls service calls this). The contact and the
 * campaign's counters change in ONE transaction conditioned on the contact being in progress at
 * this attempt, so a duplicate or late outcome changes nothing. A retryable outcome with
 * attempts left returns the contact to pending, due `retry_gap_min` after the call ended (moved
 * to the window's next opening); a call the carrier never dialed (`dialed: false`) returns it to
 * pending after a back-off without using up an attempt; then the campaign's next due contact is dispatched at once and
 * the campaign completes when nothing is pending or in progress.
 */
export async function recordCampaignCallOutcome(
  organizationId: string,
  campaignId: string,
  campaignContactId: string,
  attempt: number,
  outcome: CampaignCallOutcome,
): Promise<{ applied: boolean }> {
  for (let round = 0; ; round++) {
    const result = await applyOutcome(organizationId, campaignId, campaignContactId, attempt, outcome);
    if (result !== 'again') return { applied: result };
    if (round + 1 >= MAX_ATTEMPTS) throw new Error('A campaign call outcome kept losing races; the caller retries it');
    await pause(round);
  }
}

async function applyOutcome(orgId: string, campaignId: string, campaignContactId: string, attempt: number, outcome: CampaignCallOutcome): Promise<boolean | 'again'> {
  // Both in one BatchGetItem (strongly consistent, as the GetItems were).
  const [ccKey, cKey] = [contactKey(orgId, campaignId, campaignContactId), campaignKey(orgId, campaignId)];
  const read = await getKeyed([ccKey, cKey]);
  const cc = read<CampaignContactItem>(ccKey);
  const campaign = read<CampaignItem>(cKey);
  if (!cc || !campaign || cc.status !== 'in_progress' || cc.attempt_count !== attempt) return false;
  const result = classify(outcome);
  const undialedBefore = cc.undialed_attempts ?? 0;
  // A call the carrier never dialed (it refused or was unreachable, or the call was never sent to
  // it) is not an attempt: due again after a back-off, up to MAX_UNDIALED times per contact.
  const undialed = outcome.dialed === false && outcome.disconnectionReason === 'failed' && undialedBefore < MAX_UNDIALED;
  const attemptsLeft = 1 + campaign.schedule.retry_attempts - (attempt - undialedBefore);
  const retry = (undialed || (result.retryable && attemptsLeft > 0)) && campaign.status !== 'completed';
  const now = clockNow();
  const contactSet: Record<string, unknown> = {
    call_session_id: outcome.callId,
    call_duration_sec: Math.max(0, Math.round(outcome.durationSec)),
    updated_at: iso(now),
  };
  let next: CampaignContactStatus = result.status;
  let dueAgain: string | undefined;
  if (retry && undialed) {
    const failures = (cc.dial_failures ?? 0) + 1;
    const due = await backoffDue(campaign, cc, now, failures);
    next = 'pending';
    dueAgain = due;
    Object.assign(contactSet, {
      status: 'pending', next_retry_at: due, error_message: outcome.errorMessage ?? 'call not dialed', dial_failures: failures, undialed_attempts: undialedBefore + 1,
      ...dueIndex(orgId, campaignId, cc.id, due),
    });
  } else if (retry) {
    const gapEnd = new Date(Date.parse(outcome.endedAt) + campaign.schedule.retry_gap_min * 60_000);
    const { nextOpening } = await windowRules();
    const due = nextOpening(campaign.schedule, gapEnd, cc.timezone) ?? new Date('9999-12-31T00:00:00.000Z');
    next = 'pending';
    dueAgain = iso(due);
    Object.assign(contactSet, { status: 'pending', next_retry_at: iso(due), error_message: '', ...dueIndex(orgId, campaignId, cc.id, iso(due)) });
  } else {
    Object.assign(contactSet, { status: result.status, next_retry_at: null, error_message: result.message });
  }
  Object.assign(contactSet, contactStatusIndex(orgId, campaignId, cc.id, next));
  try {
    await transact([
      updateWrite(contactKey(orgId, campaignId, cc.id), {
        set: contactSet,
        remove: retry ? ['lease_until'] : ['lease_until', 'gsi1pk', 'gsi1sk', 'due_at'],
        condition: '#st = :ip AND #ac = :ac',
        names: { '#st': 'status', '#ac': 'attempt_count' },
        values: { ':ip': 'in_progress', ':ac': attempt },
      }),
      updateWrite(campaignKey(orgId, campaignId), {
        add: { 'contact_stats.in_progress': -1, [`contact_stats.${next}`]: 1 },
        // A retry only while the campaign is not completed (a cancel in between makes it final instead).
        ...(retry ? { condition: '#cst <> :completed', names: { '#cst': 'status' }, values: { ':completed': 'completed' } } : {}),
      }),
    ]);
  } catch (err) {
    if (!(err instanceof ConditionFailed)) throw err;
    // A race on the campaign item, or a cancel that landed first: read both again and decide.
    if (err.message === 'transaction conflict' || failedItems(err).includes(1)) return 'again';
    return false;
  }
  // The retry's due entry is committed: the tick's marker falls to it (engine.ts, runTick).
  if (dueAgain) await noteDue('campaign-tick', dueAgain);
  if (campaign.status === 'running') await queueDispatch(orgId, campaignId, 'outcome');
  await settle(orgId, campaignId);
  return true;
}

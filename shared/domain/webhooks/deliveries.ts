import { v7 as uuidv7 } from 'uuid';
import { currentTraceId } from '../../telemetry/tracing';
import { safePost } from '../../adapters/egress';
import { queue } from '../../adapters/queue';
import { gsi1, gsi2, keys, shardOf, SWEEP_SHARDS } from '../../db/keys';
import { countRange, queryRangePage, type RangeQuery } from '../../db/filtered-query';
import { ConditionFailed, getItem, ignoreConditionFailed, putNew, queryPage, transact, updateExisting } from '../../db/store';
import { armSweep, earlier, noteDue, recordSweptThrough, settleSweep, sweepDue } from '../../db/sweep-marker';
import { NotFoundError, UnprocessableError } from '../../errors';
import { listResult } from '../common/list-result';
import { logger } from '../../logger';
import { eventTtl, eventWrite, FANOUT_QUEUE, newEvent, type FanoutMessage } from '../events/publish';
import type { EventType } from '../events/types';
import type { Delivery, DeliveryListInput } from './schemas';
import { allWebhooks, anyEndpointFor, cachedWebhooks, findWebhook, signingSecrets, subscribes, webhookOr404, type WebhookItem } from './service';
import { webhookHeaders } from './signature';

/**
 * Delivery of events to endpoints.
 *
 * - Fan-out (event-fanout job): for an event still marked undispatched, one delivery job item per
 *   enabled, subscribed endpoint (key = endpoint + event, put if new: a duplicate message writes
 *   nothing twice), one `webhook-delivery` message each, then the event's mark removed.
 * - A delivery job is a small state machine on its item: `auto_attempt` (automatic attempts made),
 *   `attempts` (all attempts, numbering the log), `status` pending → succeeded | failed (given up)
 *   | dropped (endpoint disabled or deleted). A message names the automatic attempt it is for;
 *   the worker claims the job (conditional write), POSTs, then records the attempt (log item put
 *   and job moved on, one transaction conditioned on its claim). A stale or duplicate message
 *   finds the attempt already made or claimed and does nothing.
 * - Retries after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h. Every pending job sits in a sparse
 *   due index (gsi2 `WHDUE#<shard>`). Waits up to SQS's 15 minutes also go as a delayed message
 *   (the fast path), their index entry set a grace period later so the minute sweep only steps in
 *   when that message was lost; longer waits are the index alone, found by the minute sweep.
 */

export const DELIVERY_QUEUE = 'webhook-delivery';
/** Seconds before each retry: after attempt n (1-based) fails, attempt n + 1 waits RETRY_DELAYS_SECONDS[n - 1]. */
export const RETRY_DELAYS_SECONDS = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];
/** The first attempt and seven retries; then the job is given up. */
export const MAX_AUTOMATIC_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** One attempt, name resolution to the last byte of the answer. */
export const ATTEMPT_TIMEOUT_MS = 15_000;
/** The longest SQS message delay; longer waits go to the due index alone. */
const MAX_QUEUE_DELAY_SECONDS = 900;
/** How long a claim holds a job: above the worker's timeout, so a live attempt is never claimed twice. */
const CLAIM_MS = 90_000;
/** How long after its due time a queued attempt is left to its message before the sweep sends another. */
export const RECOVERY_GRACE_MS = 2 * 60_000;
/** An undispatched event this old is fanned out by the sweep (its dispatch message was lost). */
export const EVENT_SWEEP_AGE_MS = 30_000;
export const WEBHOOK_USER_AGENT = 'VoiceAgentPlatform-Webhooks/1.0';

/** A delivery message: the automatic attempt (1-based) of one event to one endpoint. */
export interface DeliveryMessage {
  organization_id: string;
  webhook_id: string;
  event_id: string;
  attempt: number;
}

type JobStatus = 'pending' | 'succeeded' | 'failed' | 'dropped' | 'manual';

interface JobItem {
  pk: string;
  sk: string;
  version: number;
  organization_id: string;
  webhook_id: string;
  event_id: string;
  event_type: EventType;
  status: JobStatus;
  auto_attempt: number;
  attempts: number;
  next_attempt_at?: string;
  claim_token?: string;
  claim_until?: number;
  ttl: number;
}

interface EventItem {
  id: string;
  type: EventType;
  created_at: string;
  body: string;
  ttl: number;
  gsi2pk?: string;
}

type DeliveryItem = Delivery & { pk: string; sk: string; ttl: number };

const iso = (ms: number) => new Date(ms).toISOString();
const nowSeconds = () => Math.floor(Date.now() / 1000);

function dueEntry(orgId: string, webhookId: string, eventId: string, sweepAt: number) {
  return { gsi2pk: gsi2.webhookJobsDue(shardOf(webhookId, eventId)), gsi2sk: gsi2.webhookJobEntry(iso(sweepAt), orgId, webhookId, eventId) };
}

function jobItem(orgId: string, webhookId: string, event: { id: string; type: EventType; created_at: string }, now: number, status: JobStatus) {
  return {
    ...keys.webhookJob(orgId, webhookId, event.id),
    entity: 'WEBHOOK_JOB',
    version: 1,
    organization_id: orgId,
    webhook_id: webhookId,
    event_id: event.id,
    event_type: event.type,
    status,
    auto_attempt: 0,
    attempts: 0,
    created_at: iso(now),
    ttl: eventTtl(event.created_at),
    ...(status === 'pending' ? { next_attempt_at: iso(now), ...dueEntry(orgId, webhookId, event.id, now + RECOVERY_GRACE_MS) } : {}),
  };
}

/** Queues delivery messages; a lost send is recovered by the due index, so it only logs. */
async function queueDeliveries(messages: DeliveryMessage[], delaySeconds = 0): Promise<void> {
  await Promise.all(
    messages.map((m) =>
      queue()
        .send(DELIVERY_QUEUE, m, delaySeconds ? { delaySeconds } : undefined)
        .catch((err: Error) => logger.warn('delivery not queued; the sweep will send it', { event_id: m.event_id, webhook_id: m.webhook_id, error: err.message })),
    ),
  );
}

// ---------------------------------------------------------------------------------------------
// Fan-out

/**
 * Writes one delivery job per enabled endpoint subscribed to the event and queues its first
 * attempt, then clears the event's undispatched mark. Idempotent: an event already dispatched
 * is skipped; a job already written (a crashed earlier run) is left to its due-index entry.
 *
 * An event no endpoint wants (the organization has none enabled and subscribed to its `type`, by
 * the container's copy of its endpoints: webhooks/service.ts, cachedWebhooks) costs no request: its
 * mark is left, and expires with the event. The minute sweep reads past such marks once, with the
 * endpoints read afresh, and fans the event out if an endpoint wants it by then (sweepWebhooks).
 */
export async function fanOutEvent(orgId: string, eventId: string, now: number = Date.now(), type?: EventType): Promise<{ jobs: number }> {
  const copy = cachedWebhooks(orgId);
  if (copy && !anyEndpointFor(copy, type)) return { jobs: 0 };
  // Read afresh when some endpoint may want it (a copy saying so may be stale), or when there is no copy.
  const enabled = (await allWebhooks(orgId)).filter((w) => w.enabled);
  if (!anyEndpointFor(enabled, type)) return { jobs: 0 };
  const event = await getItem<EventItem>(keys.event(orgId, eventId));
  if (!event || !event.gsi2pk) return { jobs: 0 };
  const endpoints = enabled.filter((w) => subscribes(w, event.type));
  const fresh: DeliveryMessage[] = [];
  await Promise.all(
    endpoints.map(async (w) => {
      try {
        await transact([putNew(jobItem(orgId, w.id, event, now, 'pending'))]);
        fresh.push({ organization_id: orgId, webhook_id: w.id, event_id: event.id, attempt: 1 });
      } catch (err) {
        ignoreConditionFailed(err);
      }
    }),
  );
  if (fresh.length) await noteDue('webhook-sweep', iso(now + RECOVERY_GRACE_MS));
  await queueDeliveries(fresh);
  await transact([updateExisting(keys.event(orgId, eventId), { dispatched_at: iso(now) }, { remove: ['gsi2pk', 'gsi2sk'] })]).catch(ignoreConditionFailed);
  return { jobs: fresh.length };
}

// ---------------------------------------------------------------------------------------------
// One attempt

interface AttemptResult {
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  succeeded: boolean;
}

/** POSTs the stored body, signed, through the egress guard; never throws (a failure is a result). */
async function send(endpoint: WebhookItem, event: Pick<EventItem, 'id' | 'body'>): Promise<AttemptResult> {
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    // The signed timestamp is the wall clock at sending, whatever clock schedules the retries.
    const headers = { ...webhookHeaders(await signingSecrets(endpoint, Date.now()), event.id, nowSeconds(), event.body), 'user-agent': WEBHOOK_USER_AGENT };
    const { status } = await safePost(endpoint.url, event.body, headers, { timeoutMs: ATTEMPT_TIMEOUT_MS });
    const succeeded = status >= 200 && status < 300;
    const error = succeeded ? null : status >= 300 && status < 400 ? `HTTP ${status} (redirects are not followed)` : `HTTP ${status}`;
    return { status_code: status, latency_ms: latency(), error, succeeded };
  } catch (err) {
    return { status_code: null, latency_ms: latency(), error: (err as Error).message, succeeded: false };
  }
}

/**
 * Stores an attempt: the log item and the job moved on in one transaction, numbered from the
 * job's `attempts`. An automatic attempt is conditioned on its claim too; a lost claim records nothing.
 */
async function recordAttempt(
  orgId: string,
  job: JobItem,
  event: Pick<EventItem, 'id' | 'type'>,
  result: AttemptResult,
  trigger: Delivery['trigger'],
  jobChange: { set?: Record<string, unknown>; remove?: string[]; claimToken?: string } = {},
): Promise<Delivery | undefined> {
  const key = keys.webhookJob(orgId, job.webhook_id, event.id);
  let current: JobItem | undefined = job;
  for (let round = 0; round < 10 && current; round++) {
    if (jobChange.claimToken && current.claim_token !== jobChange.claimToken) return undefined;
    const id = uuidv7();
    const created_at = new Date().toISOString();
    const delivery: Delivery = { id, webhook_id: job.webhook_id, event_id: event.id, event_type: event.type, attempt: current.attempts + 1, ...result, trigger, trace_id: currentTraceId(), created_at };
    try {
      await transact([
        updateExisting(key, { ...jobChange.set, attempts: delivery.attempt }, {
          remove: jobChange.remove,
          condition: `#att = :att${jobChange.claimToken ? ' AND #tok = :tok' : ''}`,
          names: { '#att': 'attempts', ...(jobChange.claimToken ? { '#tok': 'claim_token' } : {}) },
          values: { ':att': current.attempts, ...(jobChange.claimToken ? { ':tok': jobChange.claimToken } : {}) },
        }),
        putNew({
          ...keys.webhookDelivery(orgId, job.webhook_id, id),
          entity: 'WEBHOOK_DELIVERY',
          ...delivery,
          ttl: job.ttl,
          gsi1pk: gsi1.webhookDeliveriesByOutcome(orgId, job.webhook_id, result.succeeded),
          gsi1sk: id,
        }),
      ]);
      return delivery;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      // Another attempt (a redeliver) was numbered first: number this one after it.
      current = await getItem<JobItem>(key);
    }
  }
  throw new Error(`Could not record a delivery attempt of event ${event.id}`);
}

/** Ends a job without an attempt (endpoint disabled or deleted, event expired). */
async function dropJob(orgId: string, job: JobItem): Promise<void> {
  await transact([
    updateExisting(keys.webhookJob(orgId, job.webhook_id, job.event_id), { status: 'dropped' }, {
      remove: ['gsi2pk', 'gsi2sk', 'next_attempt_at'],
      condition: '#st = :pending AND #aa = :aa',
      names: { '#st': 'status', '#aa': 'auto_attempt' },
      values: { ':pending': 'pending', ':aa': job.auto_attempt },
    }),
  ]).catch(ignoreConditionFailed);
}

export type AttemptOutcome = 'stale' | 'claimed' | 'dropped' | 'succeeded' | 'retry' | 'given-up';

/**
 * Makes automatic attempt `message.attempt` of a job, unless it was made already, is being made,
 * or the endpoint no longer wants it. `now` is the scheduling clock (tests pass a manual one).
 */
export async function runAutomaticAttempt(message: DeliveryMessage, now: () => number = Date.now): Promise<AttemptOutcome> {
  const orgId = message.organization_id;
  const key = keys.webhookJob(orgId, message.webhook_id, message.event_id);
  const job = await getItem<JobItem>(key);
  if (!job || job.status !== 'pending' || job.auto_attempt !== message.attempt - 1) return 'stale';
  if (job.claim_until && job.claim_until > now()) return 'claimed';
  const [endpoint, event] = await Promise.all([findWebhook(orgId, job.webhook_id), getItem<EventItem>(keys.event(orgId, job.event_id))]);
  if (!endpoint || !endpoint.enabled || !subscribes(endpoint, job.event_type) || !event) {
    await dropJob(orgId, job);
    return 'dropped';
  }
  const token = uuidv7();
  try {
    await transact([
      updateExisting(key, { claim_token: token, claim_until: now() + CLAIM_MS }, {
        condition: '#st = :pending AND #aa = :aa AND (attribute_not_exists(#cu) OR #cu < :now)',
        names: { '#st': 'status', '#aa': 'auto_attempt', '#cu': 'claim_until' },
        values: { ':pending': 'pending', ':aa': job.auto_attempt, ':now': now() },
      }),
    ]);
  } catch (err) {
    ignoreConditionFailed(err);
    return 'claimed';
  }
  const claimed = { ...job, claim_token: token };

  const result = await send(endpoint, event);
  const attempt = message.attempt;
  let outcome: AttemptOutcome;
  let change: { set: Record<string, unknown>; remove: string[] };
  let delay = 0;
  let sweepAt: number | undefined;
  if (result.succeeded || attempt >= MAX_AUTOMATIC_ATTEMPTS) {
    outcome = result.succeeded ? 'succeeded' : 'given-up';
    change = { set: { auto_attempt: attempt, status: result.succeeded ? 'succeeded' : 'failed' }, remove: ['claim_token', 'claim_until', 'next_attempt_at', 'gsi2pk', 'gsi2sk'] };
  } else {
    outcome = 'retry';
    delay = RETRY_DELAYS_SECONDS[attempt - 1]!;
    const due = now() + delay * 1000;
    sweepAt = delay <= MAX_QUEUE_DELAY_SECONDS ? due + RECOVERY_GRACE_MS : due;
    change = { set: { auto_attempt: attempt, next_attempt_at: iso(due), ...dueEntry(orgId, job.webhook_id, job.event_id, sweepAt) }, remove: ['claim_token', 'claim_until'] };
  }
  const recorded = await recordAttempt(orgId, claimed, event, result, 'automatic', { ...change, claimToken: token });
  if (!recorded) return 'claimed';
  if (sweepAt !== undefined) await noteDue('webhook-sweep', iso(sweepAt));
  if (outcome === 'retry' && delay <= MAX_QUEUE_DELAY_SECONDS) await queueDeliveries([{ ...message, attempt: attempt + 1 }], delay);
  if (outcome === 'given-up') logger.info('webhook delivery given up', { event_id: job.event_id, webhook_id: job.webhook_id, attempts: attempt });
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// The minute sweep

export interface SweepSummary {
  /** Undispatched events whose fan-out was queued again. */
  events: number;
  /** Delivery jobs whose next attempt was queued (due long waits, or lost messages). */
  jobs: number;
}

/** How far before the last sweep's reach a sweep reads undispatched events again (a global index shows an entry late). */
const EVENTS_SWEPT_MARGIN_MS = 2 * 60_000;
/** How far ahead the sweep's marker may be left when nothing is pending (see sweepWebhooks). */
export const WEBHOOK_SWEEP_HORIZON_MS = 15 * 60_000;

/** The ISO time an index entry's sort key starts with. */
const entryTime = (sk: string) => sk.slice(0, sk.indexOf('#'));

/**
 * The minute sweep: queues fan-out for events left undispatched (older than 30 s) and the next
 * attempt of every pending job whose due-index entry has come (a long wait ending, or a queued
 * attempt that never ran). Each shard of the two sparse indexes is one Query; no Scan.
 *
 * An idle minute is one GetItem, the sweep's marker (shared/db/sweep-marker.ts): a job entry's
 * writer (fan-out, a retry) lowers it; an event's does only when its fan-out message could not be
 * queued (dispatchEvents). An event whose writer died between its write and its dispatch is
 * fanned out when the marker comes, within WEBHOOK_SWEEP_HORIZON_MS.
 *
 * Undispatched events are read from where the last complete sweep left them (the marker's
 * `swept_through`, less EVENTS_SWEPT_MARGIN_MS), since the marks of events no endpoint wanted stay
 * until the event expires: each is read by one sweep (two, in the margin) and passed over, unless
 * its organization (read afresh, once per sweep) now has an endpoint for it. An event whose fan-out
 * is queued again holds `swept_through` back until its fan-out clears its mark.
 */
export async function sweepWebhooks(now: number = Date.now()): Promise<SweepSummary> {
  const summary: SweepSummary = { events: 0, jobs: 0 };
  const gate = await sweepDue('webhook-sweep', iso(now), WEBHOOK_SWEEP_HORIZON_MS);
  if (!gate.due) return summary;
  const horizon = iso(now + WEBHOOK_SWEEP_HORIZON_MS);
  await armSweep('webhook-sweep', horizon);
  let earliestLeft: string | undefined;
  const eventsBefore = iso(now - EVENT_SWEEP_AGE_MS);
  const nowIso = iso(now);
  // Events: from the last sweep that read them all (less a margin), since marks no endpoint wanted stay behind it.
  const eventsFrom = gate.sweptThrough ? iso(Date.parse(gate.sweptThrough) - EVENTS_SWEPT_MARGIN_MS) : undefined;
  let eventsSweptTo = eventsBefore;
  // Each organization's endpoints read afresh once per sweep: a container's copy may miss a new one.
  const endpointsOf = new Map<string, Promise<WebhookItem[]>>();
  const wanted = async (entry: { gsi2sk: string; type?: EventType }) => {
    const orgId = entry.gsi2sk.split('#')[1]!;
    if (!endpointsOf.has(orgId)) endpointsOf.set(orgId, allWebhooks(orgId));
    return anyEndpointFor(await endpointsOf.get(orgId)!, entry.type);
  };
  /**
   * Entries of one shard below `upTo` (from `from`), oldest first, up to the first one later than
   * `dueBy` (which only sets the marker); entries `keep` refuses are passed over.
   */
  async function* dueEntries<T extends { gsi2sk: string }>(pkValue: string, dueBy: string, upTo: string, leadMs: number, from?: string, keep?: (entry: T) => Promise<boolean>): AsyncGenerator<T> {
    let cursor: string | undefined;
    const range = from ? { skFrom: from, skTo: `${upTo}$` } : { skBelow: `${upTo}$` };
    do {
      const page = await queryPage<T>({ index: gsi2.name, pkName: 'gsi2pk', pkValue, skName: 'gsi2sk', ...range }, { limit: 50, ...(cursor ? { cursor } : {}) });
      for (const entry of page.items) {
        if (keep && !(await keep(entry))) continue;
        if (entryTime(entry.gsi2sk) > dueBy) {
          earliestLeft = earlier(earliestLeft, iso(Date.parse(entryTime(entry.gsi2sk)) + leadMs));
          return;
        }
        yield entry;
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  await Promise.all(
    Array.from({ length: SWEEP_SHARDS }, async (_, shard) => {
      const fanouts: FanoutMessage[] = [];
      for await (const e of dueEntries<{ gsi2sk: string; type?: EventType }>(gsi2.eventsUndispatched(shard), eventsBefore, horizon, EVENT_SWEEP_AGE_MS, eventsFrom, wanted)) {
        const [, orgId, eventId] = e.gsi2sk.split('#');
        fanouts.push({ organization_id: orgId!, event_id: eventId!, ...(e.type ? { type: e.type } : {}) });
        // Read again by the next sweep until its fan-out clears it.
        eventsSweptTo = earlier(eventsSweptTo, entryTime(e.gsi2sk))!;
      }
      await Promise.all(fanouts.map((m) => queue().send(FANOUT_QUEUE, m)));
      summary.events += fanouts.length;
      // A fan-out queued again is looked at again if it is lost too.
      if (fanouts.length) earliestLeft = earlier(earliestLeft, iso(now + 60_000));

      for await (const j of dueEntries<{ gsi2sk: string; auto_attempt: number }>(gsi2.webhookJobsDue(shard), nowIso, horizon, 0)) {
        const [, orgId, webhookId, eventId] = j.gsi2sk.split('#');
        await queue().send(DELIVERY_QUEUE, { organization_id: orgId!, webhook_id: webhookId!, event_id: eventId!, attempt: j.auto_attempt + 1 } satisfies DeliveryMessage);
        // Looked at again only after a grace period, should this message be lost too.
        await transact([
          updateExisting(keys.webhookJob(orgId!, webhookId!, eventId!), dueEntry(orgId!, webhookId!, eventId!, now + RECOVERY_GRACE_MS), {
            condition: '#st = :pending AND #aa = :aa',
            names: { '#st': 'status', '#aa': 'auto_attempt' },
            values: { ':pending': 'pending', ':aa': j.auto_attempt },
          }),
        ]).catch(ignoreConditionFailed);
        earliestLeft = earlier(earliestLeft, iso(now + RECOVERY_GRACE_MS));
        summary.jobs++;
      }
    }),
  );
  await recordSweptThrough('webhook-sweep', eventsSweptTo);
  await settleSweep('webhook-sweep', earliestLeft);
  if (summary.events || summary.jobs) logger.info('webhook sweep', { ...summary });
  return summary;
}

// ---------------------------------------------------------------------------------------------
// Test, redeliver, the log

function deliveryView(item: DeliveryItem): Delivery {
  return {
    id: item.id,
    webhook_id: item.webhook_id,
    event_id: item.event_id,
    event_type: item.event_type,
    attempt: item.attempt,
    status_code: item.status_code ?? null,
    latency_ms: item.latency_ms,
    error: item.error ?? null,
    succeeded: item.succeeded,
    trigger: item.trigger,
    trace_id: item.trace_id ?? null,
    created_at: item.created_at,
  };
}

/**
 * Sends a signed `ping` to one endpoint now and answers the attempt. The ping is stored like any
 * event (GET /events lists it) but is never fanned out: it goes to this endpoint only, once.
 */
export async function testWebhook(orgId: string, webhookId: string): Promise<Delivery> {
  const endpoint = await webhookOr404(orgId, webhookId);
  const { event } = newEvent(orgId, 'ping', { webhook_id: webhookId, message: 'This is a test event.' });
  const job = jobItem(orgId, webhookId, event, Date.now(), 'manual');
  await transact([eventWrite(event, false), putNew(job)]);
  const result = await send(endpoint, { id: event.id, body: JSON.stringify(event) });
  return (await recordAttempt(orgId, job as JobItem, event, result, 'test'))!;
}

/** Sends a logged attempt's event again now (same `webhook-id`) and answers the new attempt. */
export async function redeliver(orgId: string, webhookId: string, deliveryId: string): Promise<Delivery> {
  const endpoint = await webhookOr404(orgId, webhookId);
  const source = await getItem<DeliveryItem>(keys.webhookDelivery(orgId, webhookId, deliveryId));
  if (!source || source.ttl <= nowSeconds()) throw new NotFoundError('Delivery', deliveryId);
  const event = await getItem<EventItem>(keys.event(orgId, source.event_id));
  if (!event || event.ttl <= nowSeconds()) throw new UnprocessableError('The event is no longer stored (events are kept 30 days)', { event_id: source.event_id });
  const jobKey = keys.webhookJob(orgId, webhookId, event.id);
  let job = await getItem<JobItem>(jobKey);
  if (!job) {
    await transact([putNew(jobItem(orgId, webhookId, event, Date.now(), 'manual'))]).catch(ignoreConditionFailed);
    job = (await getItem<JobItem>(jobKey))!;
  }
  const result = await send(endpoint, event);
  return (await recordAttempt(orgId, job, event, result, 'redeliver'))!;
}

/** An endpoint's attempts, newest first; `succeeded` filters through gsi1; total counted over the same range. */
export async function listDeliveries(orgId: string, webhookId: string, q: DeliveryListInput) {
  await webhookOr404(orgId, webhookId);
  // TTL deletion lags expiry by up to days: expired attempts are filtered so totals stay exact.
  const filter = { expression: '#ttl > :now', names: { '#ttl': 'ttl' }, values: { ':now': nowSeconds() } };
  const range: RangeQuery =
    q.succeeded === undefined
      ? { pkName: 'pk', pkValue: keys.webhookPartition(orgId, webhookId), skName: 'sk', skPrefix: keys.webhookDeliveryPrefix, descending: true, filter }
      : { index: 'gsi1', pkName: 'gsi1pk', pkValue: gsi1.webhookDeliveriesByOutcome(orgId, webhookId, q.succeeded === 'true'), skName: 'gsi1sk', descending: true, filter };
  const [page, total] = await Promise.all([queryRangePage<DeliveryItem>(range, q), countRange(range)]);
  return listResult({ items: page.items.map(deliveryView), nextCursor: page.nextCursor }, total, q);
}

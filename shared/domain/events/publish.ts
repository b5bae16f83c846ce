import { v7 as uuidv7 } from 'uuid';
import { noteDue } from '../../db/sweep-marker';
import { queue } from '../../adapters/queue';
import { gsi1, gsi2, keys, shardOf } from '../../db/keys';
import { putNew, type TransactItem } from '../../db/store';
import { logger } from '../../logger';

/**
 * Publishing an event: the one way anything leaves the platform for a customer's endpoints.
 *
 * The event item is the outbox. It is written in the SAME transaction as the state change that
 * causes it, carrying a sparse "undispatched" entry (gsi2 `EVENTQ#<shard>`). After the commit,
 * `dispatchEvents` queues one fan-out message per event (the fast path); the fan-out job writes
 * the delivery jobs and removes the entry (an event no endpoint wants keeps it, read past once by
 * the sweep: webhooks/deliveries.ts). A crash between commit and dispatch leaves the entry, and the minute sweep (webhook-sweep) queues the fan-out again. So a committed change never loses
 * its event, and nothing but this module runs on the request path (no egress, no endpoint reads).
 */

export { EVENT_TYPES, type EventType, type PlatformEvent } from './types';
import type { EventType, PlatformEvent } from './types';

/** Events are kept (and readable through GET /events) this long; DynamoDB TTL removes them. */
export const EVENT_TTL_DAYS = 30;
/** The queue the fan-out job reads. */
export const FANOUT_QUEUE = 'event-fanout';

/** The fan-out message: which event of which organization, and its type (so an event no endpoint wants is not read). */
export interface FanoutMessage {
  organization_id: string;
  event_id: string;
  /** Absent on messages queued before it was added: the fan-out then reads the event. */
  type?: EventType;
}

/** Epoch seconds when an item created at `createdAt` expires with its event. */
export function eventTtl(createdAt: string): number {
  return Math.floor(Date.parse(createdAt) / 1000) + EVENT_TTL_DAYS * 86_400;
}

/**
 * The stored event. `body` is the event serialized once: what GET /events answers and what every
 * delivery sends and signs, byte for byte. `dispatch` false (a test ping) skips the fan-out entry.
 */
export function eventWrite(event: PlatformEvent, dispatch = true): TransactItem {
  return putNew({
    ...keys.event(event.organization_id, event.id),
    entity: 'EVENT',
    id: event.id,
    type: event.type,
    created_at: event.created_at,
    body: JSON.stringify(event),
    ttl: eventTtl(event.created_at),
    gsi1pk: gsi1.eventsOfType(event.organization_id, event.type),
    gsi1sk: event.id,
    ...(dispatch
      ? { gsi2pk: gsi2.eventsUndispatched(shardOf(event.id)), gsi2sk: gsi2.eventEntry(event.created_at, event.organization_id, event.id) }
      : {}),
  });
}

/** Builds an event (id UUID v7) and the outbox write that stores it; put `write` in the SAME TransactWrite as the state change. */
export function newEvent(organizationId: string, type: EventType, data: Record<string, unknown>, now: Date = new Date()): { event: PlatformEvent; write: TransactItem } {
  const event: PlatformEvent = { id: uuidv7({ msecs: now.getTime() }), type, created_at: now.toISOString(), organization_id: organizationId, data };
  return { event, write: eventWrite(event) };
}

/** After the transaction committed: starts fan-out now (best effort, never throws); a periodic sweep recovers anything this misses. */
export async function dispatchEvents(events: PlatformEvent[]): Promise<void> {
  await Promise.all(
    events.map(async (event) => {
      try {
        const message: FanoutMessage = { organization_id: event.organization_id, event_id: event.id, type: event.type };
        await queue().send(FANOUT_QUEUE, message);
      } catch (err) {
        // The event is stored with its undispatched entry: the minute sweep fans it out.
        logger.warn('event fan-out not queued; the sweep will recover it', { event_id: event.id, error: (err as Error).message });
        // …and its marker must say so (shared/db/sweep-marker.ts); if even this fails, the marker's horizon finds it.
        await noteDue('webhook-sweep', event.created_at).catch(() => undefined);
      }
    }),
  );
}

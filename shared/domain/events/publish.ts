import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { v7 as uuidv7 } from 'uuid';
import { keys } from '../../db/keys';
import { putNew } from '../../db/store';

/*
 * MINIMAL STAND-IN, replaced by the webhooks branch (wt/webhooks) on merge: the exported
 * signatures are the coordinator's contract (contracts.md, "Events"); this version only stores
 * the event in the organization's partition (EVENT#<id>) inside the caller's transaction, and
 * dispatchEvents does nothing (no fan-out, no webhook delivery yet).
 */

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export type EventType = 'call.started' | 'call.ended' | 'call.analyzed' | 'campaign.started' | 'campaign.completed'
  | 'appointment.booked' | 'appointment.rescheduled' | 'appointment.cancelled' | 'ping';

export interface PlatformEvent {
  id: string;
  type: EventType;
  created_at: string;
  organization_id: string;
  data: Record<string, unknown>;
}

/** Events are kept 30 days (operations.md). */
const RETENTION_SECONDS = 30 * 24 * 3600;

/** Builds an event (id UUID v7) and the outbox write that stores it; put `write` in the SAME TransactWrite as the state change. */
export function newEvent(organizationId: string, type: EventType, data: Record<string, unknown>, now: Date = new Date()): { event: PlatformEvent; write: TransactItem } {
  const event: PlatformEvent = { id: uuidv7({ msecs: now.getTime() }), type, created_at: now.toISOString(), organization_id: organizationId, data };
  const ttl = Math.floor(now.getTime() / 1000) + RETENTION_SECONDS;
  return { event, write: putNew({ ...keys.event(organizationId, event.id), entity: 'EVENT', ...event, ttl }) };
}

/** After the transaction committed: starts fan-out now (best effort, never throws); a periodic sweep recovers anything this misses. */
export async function dispatchEvents(events: PlatformEvent[]): Promise<void> {
  void events; // the stand-in has no fan-out
}

import { v7 as uuidv7 } from 'uuid';
import type { TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { keys } from '../../db/keys';
import { putNew } from '../../db/store';

// Minimal stand-in with the contract's exact signatures (../briefs contracts: "Events"), so the
// campaign engine can write its events in the same transactions as its state moves. REPLACED ON
// MERGE by the webhooks branch's implementation (outbox item shape, fan-out queue, sweep).

type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

export type EventType = 'call.started' | 'call.ended' | 'call.analyzed' | 'campaign.started' | 'campaign.completed'
  | 'appointment.booked' | 'appointment.rescheduled' | 'appointment.cancelled' | 'ping';
export interface PlatformEvent { id: string; type: EventType; created_at: string; organization_id: string; data: Record<string, unknown> }

/** Builds an event (id UUID v7) and the outbox write that stores it; put `write` in the SAME TransactWrite as the state change. */
export function newEvent(organizationId: string, type: EventType, data: Record<string, unknown>, now?: Date): { event: PlatformEvent; write: TransactItem } {
  const event: PlatformEvent = { id: uuidv7(), type, created_at: (now ?? new Date()).toISOString(), organization_id: organizationId, data };
  return { event, write: putNew({ ...keys.event(organizationId, event.id), entity: 'EVENT', ...event }) };
}

/** After the transaction committed: starts fan-out now (best effort, never throws); a periodic sweep recovers anything this misses. */
export async function dispatchEvents(events: PlatformEvent[]): Promise<void> {
  void events;
}

/** The event kinds (spec: "Webhooks and events"); publish.ts re-exports them. */
export const EVENT_TYPES = [
  'call.queued',
  'call.started',
  'call.ended',
  'call.analyzed',
  'call.transfer_started',
  'call.transferred',
  'call.transfer_failed',
  'chat.started',
  'chat.ended',
  'chat.analyzed',
  'conversation.handed_off',
  'campaign.started',
  'campaign.paused',
  'campaign.completed',
  'appointment.booked',
  'appointment.rescheduled',
  'appointment.cancelled',
  'test_run.completed',
  'ping',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface PlatformEvent {
  id: string;
  type: EventType;
  created_at: string;
  organization_id: string;
  data: Record<string, unknown>;
}

import * as z from 'zod/mini';
import { pageQueryShape, uuid } from '../common/schemas';
import { EVENT_TYPES } from '../events/types';
import { named } from '../common/named';
import { lazy } from '../common/lazy';

/** Most endpoints one organization may have (every event costs one delivery job per matching endpoint). */
export const MAX_WEBHOOKS_PER_ORG = 20;

const EVENT_FILTER_VALUES = [...EVENT_TYPES, '*'] as const;

/** `events`: event kinds to receive, or `["*"]` for every kind (then nothing else may be listed). */
const EventsFilter = /* @__PURE__ */ lazy(() => z.array(z.enum(EVENT_FILTER_VALUES)).check(
  z.minLength(1, 'must list at least one event kind, or "*"'),
  z.maxLength(EVENT_FILTER_VALUES.length),
  z.superRefine((events, ctx) => {
    if (events.includes('*') && events.length > 1) ctx.issues.push({ code: 'custom', path: [], message: '"*" must be the only entry when given', input: events });
    if (new Set(events).size !== events.length) ctx.issues.push({ code: 'custom', path: [], message: 'must not list a kind twice', input: events });
  }),
));

export const webhookFields = /* @__PURE__ */ lazy(() => ({
  url: z.string().check(z.minLength(1), z.maxLength(2048)),
  events: EventsFilter,
  description: z.string().check(z.maxLength(500)),
  enabled: z.boolean(),
}));

export const CreateWebhookBody = /* @__PURE__ */ named('CreateWebhookRequest', () => z.strictObject({
  url: webhookFields.url,
  events: webhookFields.events,
  description: z.optional(webhookFields.description),
  enabled: z.optional(webhookFields.enabled),
}), 'A new webhook endpoint: the HTTPS URL and the event kinds it receives');
export const UpdateWebhookBody = /* @__PURE__ */ named('UpdateWebhookRequest', () => z.strictObject({
  url: z.optional(webhookFields.url),
  events: z.optional(webhookFields.events),
  description: z.optional(webhookFields.description),
  enabled: z.optional(webhookFields.enabled),
}), 'The fields of a webhook endpoint to change');
export type CreateWebhookInput = z.output<typeof CreateWebhookBody>;
export type UpdateWebhookInput = z.output<typeof UpdateWebhookBody>;

export const WebhookListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export const Webhook = /* @__PURE__ */ named('WebhookEndpoint', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  url: z.string(),
  events: z.array(z.string()),
  description: z.string(),
  enabled: z.boolean(),
  /** While a rotated-out secret still signs (24 h after rotate-secret), when it stops; else null. */
  previous_secret_expires_at: z.nullable(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'A URL the platform sends signed events to (never with its secret)');
export type Webhook = z.output<typeof Webhook>;

/** Create and rotate-secret answer the signing secret, once. */
export const WebhookWithSecret = /* @__PURE__ */ named(
  'WebhookEndpointWithSecret',
  () => z.object({ ...Webhook.shape, secret: z.string() }),
  'A webhook endpoint with its signing secret (`whsec_…`), answered once by create and rotate-secret',
);

export const DeliveryParams = /* @__PURE__ */ lazy(() => z.strictObject({ id: uuid(), delivery_id: uuid() }));

export const DeliveryListQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  ...pageQueryShape,
  succeeded: z.optional(z.enum(['true', 'false'])),
}));
export type DeliveryListInput = z.output<typeof DeliveryListQuery>;

export const DELIVERY_TRIGGERS = ['automatic', 'redeliver', 'test'] as const;

export const Delivery = /* @__PURE__ */ named('WebhookDelivery', () => z.object({
  id: z.string(),
  webhook_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  /** 1 for the first attempt of this event on this endpoint; retries, redeliveries and tests count on. */
  attempt: z.number(),
  status_code: z.nullable(z.number()),
  latency_ms: z.number(),
  error: z.nullable(z.string()),
  succeeded: z.boolean(),
  /** What made this attempt: the automatic schedule, a redeliver request or a test request. */
  trigger: z.enum(DELIVERY_TRIGGERS),
  /** The OpenTelemetry trace of the attempt (its request carried this trace's `traceparent`); null when tracing is off. */
  trace_id: z.nullable(z.string()),
  created_at: z.string(),
}), 'One attempt to deliver an event to a webhook endpoint, and how it went');
export type Delivery = z.output<typeof Delivery>;

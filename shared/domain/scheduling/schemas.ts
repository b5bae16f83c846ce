import * as z from 'zod/mini';
import { named } from '../common/named';
import { uuid } from '../common/schemas';
import { timeZone } from './time';
import { lazy } from '../common/lazy';

const clock = (allow24: boolean) =>
  z.string().check(z.regex(allow24 ? /^(([01]\d|2[0-3]):[0-5]\d|24:00)$/ : /^([01]\d|2[0-3]):[0-5]\d$/, allow24 ? 'must be HH:MM (00:00–24:00)' : 'must be HH:MM (00:00–23:59)'));

export const AgentIdParams = /* @__PURE__ */ lazy(() => z.strictObject({ agent_id: uuid() }));

export const WorkingHoursBody = /* @__PURE__ */ named('WorkingHoursRequest', () => z
  .strictObject({
    days: z.array(z.int().check(z.minimum(0), z.maximum(7))).check(z.minLength(1), z.maxLength(7)),
    start: clock(false),
    end: clock(true),
    timezone: timeZone(),
  })
  .check(
    z.superRefine((w, ctx) => {
      if (w.end <= w.start) ctx.issues.push({ code: 'custom', path: ['end'], message: 'must be after start', input: w.end });
    }),
  ));
export type WorkingHoursInput = z.output<typeof WorkingHoursBody>;

export const WorkingHours = /* @__PURE__ */ named('WorkingHours', () => z.object({
  agent_id: z.string(),
  configured: z.boolean(),
  days: z.optional(z.array(z.number())),
  start: z.optional(z.string()),
  end: z.optional(z.string()),
  timezone: z.optional(z.string()),
  updated_at: z.optional(z.string()),
}), "An agent's weekly working hours");

export const IntegrationBody = /* @__PURE__ */ named('SchedulingIntegrationRequest', () => z.strictObject({
  provider: z.literal('calcom'),
  api_key: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(500)),
  event_type_id: z.int().check(z.minimum(1)),
  base_url: z.optional(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).check(z.maxLength(2048))),
  webhook_secret: z.optional(z.string().check(z.minLength(8, 'must be at least 8 characters'), z.maxLength(500))),
}));
export type IntegrationInput = z.output<typeof IntegrationBody>;

export const Integration = /* @__PURE__ */ named('SchedulingIntegration', () => z.object({
  connected: z.boolean(),
  provider: z.nullable(z.literal('calcom')),
  event_type_id: z.optional(z.number()),
  base_url: z.optional(z.string()),
  account: z.optional(z.string()),
  has_webhook_secret: z.optional(z.boolean()),
  webhook_url: z.optional(z.string()),
  connected_at: z.optional(z.string()),
}), "The scheduling integration's state (never its secrets)");
export type Integration = z.output<typeof Integration>;

export const WebhookParams = /* @__PURE__ */ lazy(() => z.strictObject({ org_id: uuid() }));
/** Cal.com's webhook envelope: `triggerEvent`, `createdAt`, `payload` (other members kept). */
export const CalcomWebhookBody = /* @__PURE__ */ named('CalcomWebhookEvent', () => z.looseObject({
  triggerEvent: z.string(),
  payload: z._default(z.looseObject({}), {}),
}), "Cal.com's webhook envelope (other members are accepted and ignored)");

/** What the webhook did with an event: `action` is what changed (or `ignored`). */
export const CalcomWebhookResult = /* @__PURE__ */ named(
  'CalcomWebhookResult',
  () => z.object({ trigger_event: z.string(), action: z.string(), appointment_id: z.optional(z.string()) }),
  'What the webhook did with the event',
);

import * as z from 'zod/mini';
import { named } from '../common/named';
import { pageQueryShape, uuid } from '../common/schemas';
import { e164 } from '../common/phone-field';
import { lazy } from '../common/lazy';
import { OVERFLOW_MODES, overflowShape } from './overflow';

export const PHONE_NUMBER_STATUSES = ['active', 'released'] as const;
export type PhoneNumberStatus = (typeof PHONE_NUMBER_STATUSES)[number];
export const PHONE_NUMBER_SOURCES = ['purchased', 'imported'] as const;
export type PhoneNumberSource = (typeof PHONE_NUMBER_SOURCES)[number];
export const CONNECTION_TYPES = ['sip', 'pstn'] as const;

const digits = (max: number) => z.string().check(z.regex(new RegExp(`^\\d{1,${max}}$`), `must be 1–${max} digits`));
const name = () => z.string().check(z.trim(), z.maxLength(200));
const money = () => z.number().check(z.minimum(0), z.maximum(10_000));

/**
 * The inbound routing webhook (./inbound-webhook.ts): an http(s) URL (https unless the local
 * runtime's loopback, checked by the service), null to clear it; its timeout 500–8,000 ms.
 */
const inboundWebhook = () => ({
  inbound_webhook_url: z.optional(z.nullable(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).check(z.maxLength(2048)))),
  inbound_webhook_timeout_ms: z.optional(z.int().check(z.minimum(500), z.maximum(8_000))),
});

/** `country` is ISO 3166 alpha-2, any case on input. */
const country = /* @__PURE__ */ lazy(() => z.pipe(
  z.string().check(z.regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166 alpha-2 country code')),
  z.transform((s: string) => s.toUpperCase()),
));

export const AvailableNumbersQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  country: z._default(country, 'US'),
  area_code: z.optional(digits(5)),
  contains: z.optional(digits(10)),
  limit: pageQueryShape.limit,
}));

export const Capabilities = /* @__PURE__ */ named('Capabilities', () => z.object({ voice: z.boolean(), sms: z.boolean(), mms: z.boolean() }), 'What a number can carry');

export const AvailableNumber = /* @__PURE__ */ named('AvailableNumber', () => z.object({
  phone_number: z.string(),
  country: z.string(),
  locality: z.string(),
  region: z.string(),
  price: z.number(),
  per_minute_price_inbound: z.number(),
  per_minute_price_outbound: z.number(),
  capabilities: Capabilities,
}), 'A number the carrier offers, with its prices');

export const BuyBody = /* @__PURE__ */ named('BuyPhoneNumberRequest', () => z.strictObject({
  phone_number: e164(),
  price: money(),
  per_minute_price_inbound: z.optional(money()),
  per_minute_price_outbound: z.optional(money()),
  /** The agent that answers calls to the number (an agent of the organization), or null. */
  inbound_agent_id: z.optional(z.nullable(uuid())),
  ...inboundWebhook(),
  ...overflowShape(),
}));
export type BuyInput = z.output<typeof BuyBody>;

/**
 * A SIP URI (`sip:` / `sips:`) or a bare host[:port], as SIP trunks name their termination; '' clears it.
 * Matched as sent, like every patterned field: surrounding or whitespace-only input is refused, not trimmed.
 */
const terminationUri = () =>
  z.string().check(z.maxLength(255), z.regex(/^$|^(sips?:)?[^\s<>"]+$/i, 'must be a SIP URI (sip:host) or a host name'));
const sipUsername = () => z.string().check(z.maxLength(128));
const sipPassword = () => z.string().check(z.maxLength(256));

export const ImportBody = /* @__PURE__ */ named('ImportPhoneNumberRequest', () => z.strictObject({
  phone: e164(),
  type: z.enum(CONNECTION_TYPES),
  name: z.optional(name()),
  termination_uri: z.optional(terminationUri()),
  sip_username: z.optional(sipUsername()),
  sip_password: z.optional(sipPassword()),
  inbound_agent_id: z.optional(z.nullable(uuid())),
  ...inboundWebhook(),
  ...overflowShape(),
}));
export type ImportInput = z.output<typeof ImportBody>;

/** PUT of an imported number: every field optional; only the fields given are replaced. */
export const UpdateImportBody = /* @__PURE__ */ named('UpdateImportedPhoneNumberRequest', () => z.strictObject({
  name: z.optional(name()),
  termination_uri: z.optional(terminationUri()),
  sip_username: z.optional(sipUsername()),
  sip_password: z.optional(sipPassword()),
  inbound_agent_id: z.optional(z.nullable(uuid())),
  ...inboundWebhook(),
  ...overflowShape(),
}));
export type UpdateImportInput = z.output<typeof UpdateImportBody>;

export const UpdatePhoneNumberBody = /* @__PURE__ */ named('UpdatePhoneNumberRequest', () => z.strictObject({
  name: z.optional(name()),
  inbound_agent_id: z.optional(z.nullable(uuid())),
  ...inboundWebhook(),
  ...overflowShape(),
}));
export type UpdatePhoneNumberInput = z.output<typeof UpdatePhoneNumberBody>;

export const PhoneNumberListQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  ...pageQueryShape,
  status: z.optional(z.enum(PHONE_NUMBER_STATUSES)),
}));

/**
 * A number the organization holds or held. Every one carries `id`, `source`, `phone_number`,
 * `name`, `status`, `inbound_agent_id`, its inbound routing webhook (`inbound_webhook_url`,
 * `inbound_webhook_timeout_ms`; `inbound_webhook_secret` only from the write that set the URL) and times; a purchased one adds the seed's purchase fields
 * (`price`, `purchased_at`), its listing and, while active, `next_renewal_at`; an imported one
 * adds the seed's import fields (`phone`, `type`, `termination_uri`, `sip_username`,
 * `sip_password` as sent).
 */
export const PhoneNumber = /* @__PURE__ */ named('PhoneNumber', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  source: z.enum(PHONE_NUMBER_SOURCES),
  phone_number: z.string(),
  name: z.string(),
  status: z.enum(PHONE_NUMBER_STATUSES),
  inbound_agent_id: z.nullable(z.string()),
  /** The inbound routing webhook asked before each call is answered (null: none; the number's agent answers). */
  inbound_webhook_url: z.nullable(z.string()),
  /** Its timeout (500–8,000 ms; 3,000 by default once a URL is set); null without a URL. */
  inbound_webhook_timeout_ms: z.nullable(z.int()),
  /** The webhook's signing secret (`whsec_…`), answered only by the write that set the URL: keep it, it is never shown again. */
  inbound_webhook_secret: z.optional(z.string()),
  /** At the organization's concurrency limit an incoming call is rejected (busy), forwarded to `overflow_phone_number` or queued with hold music (docs/api.md, "Inbound overflow"). */
  overflow: z.enum(OVERFLOW_MODES),
  /** Where `forward` sends the call (E.164), or null. */
  overflow_phone_number: z.nullable(z.string()),
  /** How long `queue` holds a caller before telling them the agents are busy (1–3,600 s; 120 by default). */
  overflow_queue_seconds: z.int(),
  /** What a queued caller hears (null: the carrier's classical hold music). */
  overflow_hold_music_url: z.nullable(z.string()),
  price: z.optional(z.number()),
  per_minute_price_inbound: z.optional(z.number()),
  per_minute_price_outbound: z.optional(z.number()),
  country: z.optional(z.string()),
  locality: z.optional(z.string()),
  region: z.optional(z.string()),
  capabilities: z.optional(Capabilities),
  purchased_at: z.optional(z.string()),
  /** A bought, active number: when its next monthly renewal is charged (absent once released). */
  next_renewal_at: z.optional(z.string()),
  phone: z.optional(z.string()),
  type: z.optional(z.enum(CONNECTION_TYPES)),
  termination_uri: z.optional(z.string()),
  sip_username: z.optional(z.string()),
  sip_password: z.optional(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
  released_at: z.nullable(z.string()),
}), 'A number the organization holds or held, bought (`purchased`) or imported');
export type PhoneNumber = z.output<typeof PhoneNumber>;

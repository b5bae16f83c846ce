import * as z from 'zod/mini';
import { named } from '../common/named';
import { freeFormObject, pageQueryShape } from '../common/schemas';
import { e164 } from '../common/phone-field';
import { timeZone } from '../scheduling/time';
import { lazy } from '../common/lazy';

const name = () => z.string().check(z.trim(), z.maxLength(200));
/** An email, trimmed and lowercased; "" clears it. */
export const email = () =>
  z.union([z.literal(''), z.pipe(z.string().check(z.trim(), z.toLowerCase(), z.maxLength(254)), z.email({ error: 'must be a valid email address' }))]);

/** Every writable contact field; all optional (the seed's create takes any subset). */
export const contactFields = /* @__PURE__ */ lazy(() => ({
  first_name: name(),
  last_name: name(),
  email: email(),
  /** E.164 after normalization; "" clears it. */
  phone: z.union([z.literal(''), e164()]),
  company: name(),
  metadata: freeFormObject(),
  /** IANA time zone; "" clears it. */
  timezone: z.union([z.literal(''), timeZone()]),
  opt_out: z.boolean(),
  tags: z.array(z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(100))).check(z.maxLength(50)),
}));

type Fields = typeof contactFields;
const optionalFields = /* @__PURE__ */ lazy(() => Object.fromEntries(Object.entries(contactFields).map(([k, v]) => [k, z.optional(v)])) as {
  [K in keyof Fields]: z.ZodMiniOptional<Fields[K]>;
});

export const CreateContactBody = /* @__PURE__ */ named('CreateContactRequest', () => z.strictObject(optionalFields));
export const UpdateContactBody = /* @__PURE__ */ named('UpdateContactRequest', () => z.strictObject(optionalFields));
export const ContactListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));
export const ContactSearchQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  ...pageQueryShape,
  q: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(200)),
}));
export const NoteBody = /* @__PURE__ */ named('NoteRequest', () => z.strictObject({ content: z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(10_000)) }));
export const HistoryListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export type ContactInput = z.output<typeof UpdateContactBody>;

export const Contact = /* @__PURE__ */ named('Contact', () => z.object({
  id: z.string(),
  first_name: z.string(),
  last_name: z.string(),
  email: z.string(),
  phone: z.string(),
  company: z.string(),
  metadata: z.record(z.string(), z.unknown()),
  timezone: z.string(),
  opt_out: z.boolean(),
  tags: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'A person the agents call or are called by');
export type Contact = z.output<typeof Contact>;

export const contactDefaults = {
  first_name: '',
  last_name: '',
  email: '',
  phone: '',
  company: '',
  metadata: {} as Record<string, unknown>,
  timezone: '',
  opt_out: false,
  tags: [] as string[],
};

export const Note = /* @__PURE__ */ named('Note', () => z.object({ id: z.string(), contact_id: z.string(), content: z.string(), created_at: z.string() }), 'A note on a contact');
export type Note = z.output<typeof Note>;

export const ACTIVITY_TYPES = ['note', 'appointment', 'call', 'campaign', 'chat'] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];
export const Activity = /* @__PURE__ */ named('Activity', () => z.object({ type: z.enum(ACTIVITY_TYPES), description: z.string(), timestamp: z.string() }), "An entry of a contact's timeline");
export type Activity = z.output<typeof Activity>;

export const ContactStats = /* @__PURE__ */ named('ContactStats', () => z.object({
  total_calls: z.number(),
  answered_calls: z.number(),
  total_call_duration_sec: z.number(),
  last_call_at: z.nullable(z.string()),
  appointments: z.number(),
  notes: z.number(),
}), "A contact's counters");
export type ContactStats = z.output<typeof ContactStats>;

/** One call in a contact's history, as the campaign and call issues record it. */
export const ContactCall = /* @__PURE__ */ named('ContactCall', () => z.object({
  id: z.string(),
  contact_id: z.string(),
  agent_id: z.nullable(z.string()),
  campaign_id: z.nullable(z.string()),
  direction: z.enum(['outbound', 'inbound']),
  status: z.string(),
  answered: z.boolean(),
  from_phone_number: z.string(),
  to_phone_number: z.string(),
  started_at: z.string(),
  ended_at: z.nullable(z.string()),
  duration_sec: z.number(),
}), "One call in a contact's history");
export type ContactCall = z.output<typeof ContactCall>;

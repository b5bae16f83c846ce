import * as z from 'zod/mini';
import { pageQueryShape, uuid } from '../common/schemas';
import { e164 } from '../common/phone-field';
import { isCalendarDate, timeZone } from '../scheduling/time';
import { named } from '../common/named';
import { lazy } from '../common/lazy';
import { AgentVersionPin } from '../agents/schemas';

/** Most contacts one create or add request takes. */
export const MAX_CONTACTS_PER_REQUEST = 10_000;

export const CAMPAIGN_STATUSES = ['draft', 'running', 'paused', 'completed'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];
export const EXECUTION_STATUSES = ['idle', 'waiting_window', 'dispatching', 'done', 'cancelled'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
/**
 * Why the engine paused a running campaign by itself: its line can no longer dial, and waiting
 * would not heal it (null when paused by request, or not paused).
 */
export const PAUSE_REASONS = ['agent_deleted', 'agent_inactive', 'number_inactive'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];
export const CONTACT_STATUSES = ['pending', 'in_progress', 'successful', 'failed', 'no_answer'] as const;
export type CampaignContactStatus = (typeof CONTACT_STATUSES)[number];

/** Where the zone a contact's window is read in comes from (preview, campaign contacts). */
export const ZONE_SOURCES = ['contact', 'phone_number', 'campaign'] as const;
export type ZoneSource = (typeof ZONE_SOURCES)[number];

/**
 * Schedule defaults when members are omitted (operations.md), except `use_contact_timezone`:
 * true for campaigns created since issue 22 (each contact is called in its own hours, its zone
 * inferred from its number when it has none), where the spec's default was false.
 */
export const scheduleDefaults = {
  window_start: '09:00',
  window_end: '17:00',
  window_days: [1, 2, 3, 4, 5],
  timezone: 'UTC',
  max_concurrent: 1,
  retry_attempts: 0,
  retry_gap_min: 60,
  blackout_dates: [] as string[],
  use_contact_timezone: true,
};

const hhmm = () => z.string().check(z.regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a time of day HH:MM (00:00 to 23:59)'));
/** A window's end may be `24:00` (the end of the day), as working hours accept. */
const hhmmEnd = () => z.string().check(z.regex(/^(([01]\d|2[0-3]):[0-5]\d|24:00)$/, 'must be a time of day HH:MM (00:00 to 24:00)'));
const int = (min: number, max: number) => z.int().check(z.minimum(min), z.maximum(max));
const isoDay = () =>
  z.string().check(
    z.regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD'),
    z.refine(isCalendarDate, 'must be a real calendar date'),
  );

/** Every schedule member, as accepted on input (each optional). */
export const scheduleShape = /* @__PURE__ */ lazy(() => ({
  window_start: z.optional(hhmm()),
  window_end: z.optional(hhmmEnd()),
  window_days: z.optional(z.array(int(0, 7)).check(z.minLength(1, 'must name at least one day'), z.maxLength(8))),
  timezone: z.optional(timeZone()),
  max_concurrent: z.optional(int(1, 100)),
  retry_attempts: z.optional(int(0, 10)),
  retry_gap_min: z.optional(int(1, 10_080)),
  blackout_dates: z.optional(z.array(isoDay()).check(z.maxLength(366))),
  use_contact_timezone: z.optional(z.boolean()),
}));
export const ScheduleInput = /* @__PURE__ */ lazy(() => z.strictObject(scheduleShape));
export type ScheduleInput = z.output<typeof ScheduleInput>;

export const Schedule = /* @__PURE__ */ named('CampaignSchedule', () => z.object({
  window_start: z.string(),
  window_end: z.string(),
  window_days: z.array(z.number()),
  timezone: z.string(),
  max_concurrent: z.number(),
  retry_attempts: z.number(),
  retry_gap_min: z.number(),
  blackout_dates: z.array(z.string()),
  use_contact_timezone: z.boolean(),
}), 'When a campaign dials: the daily window, days, time zone, concurrency, retries and blackout dates');
export type Schedule = z.output<typeof Schedule>;

const contactIds = () =>
  z.array(uuid()).check(z.minLength(1, 'must list at least one contact'), z.maxLength(MAX_CONTACTS_PER_REQUEST, `must list at most ${MAX_CONTACTS_PER_REQUEST} contacts per request`));
const campaignName = () => z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(200));

export const CreateCampaignBody = /* @__PURE__ */ named('CreateCampaignRequest', () => z.strictObject({
  name: campaignName(),
  agent_id: uuid(),
  phone_number_id: uuid(),
  from_phone_number: e164(),
  contact_ids: contactIds(),
  schedule: z.optional(ScheduleInput),
  /** Pins the agent's version for every call (a number, or "draft"); default: its published_version when the campaign starts, else the draft. */
  agent_version: z.optional(AgentVersionPin),
}), 'A new draft campaign: agent, number, contacts and schedule (omitted schedule members take their defaults)');
export type CreateCampaignInput = z.output<typeof CreateCampaignBody>;

export const UpdateCampaignBody = /* @__PURE__ */ named('UpdateCampaignRequest', () => z.strictObject({
  name: z.optional(campaignName()),
  agent_id: z.optional(uuid()),
  phone_number_id: z.optional(uuid()),
  from_phone_number: z.optional(e164()),
  schedule: z.optional(ScheduleInput),
  /**
   * The agent version the campaign's calls use (a number, or "draft"). Before the first start it
   * is the pin (as on create); after it, the version the campaign runs from now on. A new
   * `agent_id` without it resets the version: before the first start to the default (the
   * published version at the start), after it to the new agent's published version (else the draft).
   */
  agent_version: z.optional(AgentVersionPin),
}), 'The fields to change; `schedule` members merge over the stored ones');
export type UpdateCampaignInput = z.output<typeof UpdateCampaignBody>;

export const AddContactsBody = /* @__PURE__ */ named('AddCampaignContactsRequest', () => z.strictObject({ contact_ids: contactIds() }), 'Contacts to add to a draft or paused campaign');

export const CampaignListQuery = /* @__PURE__ */ lazy(() => z.strictObject({ ...pageQueryShape, status: z.optional(z.enum(CAMPAIGN_STATUSES)) }));
export const CampaignContactListQuery = /* @__PURE__ */ lazy(() => z.strictObject({ ...pageQueryShape, status: z.optional(z.enum(CONTACT_STATUSES)) }));
export const PreviewBody = /* @__PURE__ */ named('PreviewCampaignRequest', () => z.strictObject({
  /** Call length assumed by the estimate, seconds (default 120). */
  assumed_call_sec: z.optional(int(1, 3600)),
}), 'Options of a dry run: the call length its estimate assumes');

export const ContactStats = /* @__PURE__ */ named('CampaignContactStats', () => z.object({
  total: z.number(),
  contacted: z.number(),
  successful: z.number(),
  failed: z.number(),
  no_answer: z.number(),
  pending: z.number(),
  in_progress: z.number(),
}), "How many of a campaign's contacts are in each state");
export type ContactStats = z.output<typeof ContactStats>;

export const Campaign = /* @__PURE__ */ named('Campaign', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  name: z.string(),
  agent_id: z.string(),
  /** The agent version every call of the campaign uses: pinned on create, else fixed at its first start; null: the draft (or not started and not pinned). */
  agent_version: z.nullable(z.int()),
  phone_number_id: z.string(),
  from_phone_number: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  execution_status: z.enum(EXECUTION_STATUSES),
  schedule: Schedule,
  contact_stats: ContactStats,
  /** Set when the engine paused the campaign because it can no longer dial (see PAUSE_REASONS); null otherwise. */
  pause_reason: z.nullable(z.enum(PAUSE_REASONS)),
  started_at: z.nullable(z.string()),
  completed_at: z.nullable(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'An outbound calling campaign: who is called, from which number, by which agent, and when');
export type Campaign = z.output<typeof Campaign>;

/** The list's short form (the seed allows it). */
export const CampaignSummary = /* @__PURE__ */ named('CampaignSummary', () => z.object({
  id: z.string(),
  name: z.string(),
  status: z.enum(CAMPAIGN_STATUSES),
  execution_status: z.enum(EXECUTION_STATUSES),
  contact_stats: ContactStats,
  created_at: z.string(),
}), 'A campaign in the list: its state and contact counts');
export type CampaignSummary = z.output<typeof CampaignSummary>;

export const CampaignContact = /* @__PURE__ */ named('CampaignContact', () => z.object({
  id: z.string(),
  contact_id: z.string(),
  name: z.string(),
  phone: z.string(),
  email: z.string(),
  status: z.enum(CONTACT_STATUSES),
  attempt_count: z.number(),
  last_attempted_at: z.nullable(z.string()),
  next_retry_at: z.nullable(z.string()),
  call_duration_sec: z.number(),
  error_message: z.string(),
  call_session_id: z.string(),
  tags: z.array(z.string()),
}), "A contact in a campaign, with its dialing state");
export type CampaignContact = z.output<typeof CampaignContact>;

export const SKIP_REASONS = ['do_not_call', 'opt_out', 'duplicate_phone', 'no_phone', 'contact_deleted'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];

export const CampaignPreview = /* @__PURE__ */ named('CampaignPreview', () => z.object({
  campaign_id: z.string(),
  would_dial: z.number(),
  would_dial_contacts: z.array(z.object({
    contact_id: z.string(),
    phone: z.string(),
    next_opening_at: z.nullable(z.string()),
    /** The IANA zone this contact's window is read in. */
    timezone: z.string(),
    /** Where that zone comes from: the contact's own, inferred from its phone number, or the campaign's. */
    timezone_source: z.enum(ZONE_SOURCES),
  })),
  skipped: z.array(z.object({ contact_id: z.string(), phone: z.string(), reason: z.enum(SKIP_REASONS), error_message: z.string() })),
  skipped_counts: z.record(z.string(), z.number()),
  window_next_opens_at: z.nullable(z.string()),
  assumed_call_sec: z.number(),
  estimated_dialing_sec: z.number(),
  estimated_finish_at: z.nullable(z.string()),
  truncated: z.boolean(),
}), 'A dry run of a campaign: who would be dialed, who would be skipped and why, and when it would finish');
export type CampaignPreview = z.output<typeof CampaignPreview>;

import * as z from 'zod/mini';
import { named } from '../common/named';
import { pageQueryShape, uuid } from '../common/schemas';
import { e164 } from '../common/phone-field';
import { email } from '../contacts/schemas';
import { instant, instantOrDate, timeZone } from '../scheduling/time';
import { BUCKET_MINUTES, MAX_DURATION_MINUTES } from '../scheduling/buckets';
import { lazy } from '../common/lazy';

export const APPOINTMENT_STATUSES = ['accepted', 'cancelled', 'rescheduled', 'completed', 'no_show'] as const;
export type AppointmentStatus = (typeof APPOINTMENT_STATUSES)[number];

const durationInt = () =>
  z.int().check(
    z.minimum(BUCKET_MINUTES),
    z.maximum(MAX_DURATION_MINUTES),
    z.refine((n) => n % BUCKET_MINUTES === 0, `must be a multiple of ${BUCKET_MINUTES}`),
  );
export const durationMinutes = durationInt;
const queryDuration = () =>
  z.pipe(z.string().check(z.regex(/^\d+$/, 'must be a whole number of minutes')), z.pipe(z.transform((s: string) => Number(s)), durationInt()));

export const BookAppointmentBody = /* @__PURE__ */ named('BookAppointmentRequest', () => z.strictObject({
  agent_id: uuid(),
  contact_id: z.optional(uuid()),
  attendee_name: z.optional(z.string().check(z.trim(), z.minLength(1, 'must not be empty'), z.maxLength(200))),
  attendee_email: z.optional(email()),
  attendee_phone: z.optional(z.union([z.literal(''), e164()])),
  attendee_timezone: z.optional(timeZone()),
  start_time: instant(),
  duration_minutes: durationMinutes(),
}));
export type BookAppointmentInput = z.output<typeof BookAppointmentBody>;

export const RescheduleBody = /* @__PURE__ */ named('RescheduleAppointmentRequest', () => z.strictObject({
  start_time: instant(),
  duration_minutes: z.optional(durationMinutes()),
  reason: z.optional(z.string().check(z.maxLength(500))),
}));
export type RescheduleInput = z.output<typeof RescheduleBody>;

export const CancelBody = /* @__PURE__ */ named('CancelAppointmentRequest', () => z.strictObject({ reason: z.optional(z.string().check(z.maxLength(500))) }));

export const AppointmentListQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  ...pageQueryShape,
  agent_id: z.optional(uuid()),
  status: z.optional(z.enum(APPOINTMENT_STATUSES)),
  from: z.optional(instant()),
  to: z.optional(instant()),
}));
export type AppointmentListInput = z.output<typeof AppointmentListQuery>;

export const GetAppointmentQuery = /* @__PURE__ */ lazy(() => z.strictObject({ org_id: z.optional(uuid()) }));

export const AvailabilityQuery = /* @__PURE__ */ lazy(() => z.strictObject({
  agent_id: uuid(),
  start: instantOrDate(),
  end: instantOrDate(),
  duration_minutes: queryDuration(),
  timezone: z._default(timeZone(), 'UTC'),
}));
export type AvailabilityInput = z.output<typeof AvailabilityQuery>;

export const Appointment = /* @__PURE__ */ named('Appointment', () => z.object({
  id: z.string(),
  organization_id: z.string(),
  agent_id: z.string(),
  contact_id: z.nullable(z.string()),
  scheduler_booking_uid: z.string(),
  provider: z.enum(['builtin', 'calcom']),
  attendee_name: z.string(),
  attendee_email: z.string(),
  attendee_phone: z.string(),
  attendee_timezone: z.string(),
  start_time: z.string(),
  end_time: z.string(),
  duration_minutes: z.number(),
  meeting_url: z.string(),
  status: z.enum(APPOINTMENT_STATUSES),
  cancellation_reason: z.optional(z.string()),
  rescheduled_from: z.optional(z.string()),
  rescheduled_to: z.optional(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
}), 'An appointment booked with an agent (built-in calendar or Cal.com)');
export type Appointment = z.output<typeof Appointment>;

export const Availability = /* @__PURE__ */ named('Availability', () => z.object({
  agent_id: z.string(),
  timezone: z.string(),
  duration_minutes: z.number(),
  start: z.string(),
  end: z.string(),
  provider: z.enum(['builtin', 'calcom']),
  slots: z.array(z.object({ start: z.string(), end: z.string() })),
}), 'Free slots of an agent');

import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import {
  Appointment,
  AppointmentListQuery,
  Availability,
  AvailabilityQuery,
  BookAppointmentBody,
  CancelBody,
  GetAppointmentQuery,
  RescheduleBody,
} from './schemas';
import { AgentIdParams, CalcomWebhookBody, CalcomWebhookResult, Integration, IntegrationBody, WebhookParams, WorkingHours, WorkingHoursBody } from '../scheduling/schemas';

const tag = 'Appointments';
const integrationTag = 'Scheduling integration';

export const getAvailability = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/scheduler/availability', operationId: 'getAvailability', tag, auth: true,
  summary: 'Free slots of an agent in [start, end) for `duration_minutes`, shown in `timezone` (a start every 15 minutes)',
  entry: 'functions/scheduler/availability.ts', query: AvailabilityQuery, access: { table: 'R', secrets: true },
  errors: { 422: 'Cal.com (when connected) refused or is unavailable' },
});

export const bookAppointment = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/scheduler/appointments', operationId: 'bookAppointment', tag, auth: true,
  summary: 'Book an appointment (422 when the slot is taken or outside working hours)',
  entry: 'functions/scheduler/book.ts', body: BookAppointmentBody,
  successMessage: 'Appointment booked successfully', access: { table: 'RW', secrets: true, queues: ['event-fanout'] },
  errors: { 422: 'The slot is in the past, outside working hours or taken, or Cal.com refused the booking' },
});

export const listAppointments = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/scheduler/appointments', operationId: 'listAppointments', tag, auth: true,
  summary: 'List appointments; filters `agent_id`, `status`, `from`/`to` (start time)',
  entry: 'functions/scheduler/list.ts', query: AppointmentListQuery, list: true, access: { table: 'R' },
});

export const getAppointment = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/scheduler/appointments/{id}', operationId: 'getAppointment', tag, auth: true,
  summary: 'Get one appointment (`org_id`, when given, must be the key\'s organization, else 404)',
  entry: 'functions/scheduler/get.ts', params: IdParams, query: GetAppointmentQuery, access: { table: 'R' },
});

export const rescheduleAppointment = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/scheduler/appointments/{id}/reschedule', operationId: 'rescheduleAppointment', tag, auth: true,
  summary: 'Move an appointment: the old one becomes `rescheduled`, a new `accepted` one is returned (422 when taken)',
  entry: 'functions/scheduler/reschedule.ts', params: IdParams, body: RescheduleBody,
  successMessage: 'Appointment rescheduled successfully', access: { table: 'RW', secrets: true, queues: ['event-fanout'] },
  errors: {
    409: 'The appointment is not `accepted`',
    422: 'The new slot is in the past, outside working hours or taken, or Cal.com refused or is no longer connected',
  },
});

export const cancelAppointment = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/scheduler/appointments/{id}/cancel', operationId: 'cancelAppointment', tag, auth: true,
  summary: 'Cancel an appointment and free its slot',
  entry: 'functions/scheduler/cancel.ts', params: IdParams, body: CancelBody,
  successMessage: 'Appointment cancelled successfully', access: { table: 'RW', secrets: true, queues: ['event-fanout'] },
  errors: { 409: 'The appointment is not `accepted`', 422: 'Booked through Cal.com, which refused or is no longer connected' },
});

export const putWorkingHours = /* @__PURE__ */ defineOperation({
  method: 'PUT', path: '/api/v1/scheduler/working-hours/{agent_id}', operationId: 'putWorkingHours', tag, auth: true,
  summary: 'Set an agent\'s working hours (days 0–6 with 0 = Sunday, start, end, IANA timezone)',
  entry: 'functions/scheduler/put-working-hours.ts', params: AgentIdParams, body: WorkingHoursBody,
  successMessage: 'Working hours saved', access: { table: 'RW' },
});

export const getWorkingHours = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/scheduler/working-hours/{agent_id}', operationId: 'getWorkingHours', tag, auth: true,
  summary: 'An agent\'s working hours (`configured` false: bookable at any time)',
  entry: 'functions/scheduler/get-working-hours.ts', params: AgentIdParams, access: { table: 'R' },
});

export const deleteWorkingHours = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/scheduler/working-hours/{agent_id}', operationId: 'deleteWorkingHours', tag, auth: true,
  summary: 'Remove an agent\'s working hours (bookable at any time again)',
  entry: 'functions/scheduler/delete-working-hours.ts', params: AgentIdParams,
  successMessage: 'Working hours removed', access: { table: 'RW' },
});

export const connectSchedulingIntegration = /* @__PURE__ */ defineOperation({
  method: 'PUT', path: '/api/v1/scheduler/integration', operationId: 'connectSchedulingIntegration', tag: integrationTag, auth: true,
  summary: 'Connect Cal.com (`api_key` verified with Cal.com, then stored encrypted; optional `webhook_secret`)',
  entry: 'functions/scheduler/connect-integration.ts', body: IntegrationBody,
  successMessage: 'Scheduling integration connected', access: { table: 'RW', secrets: true },
  errors: { 422: 'Cal.com refused the API key or the event type, or is unavailable' },
});

export const getSchedulingIntegration = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/scheduler/integration', operationId: 'getSchedulingIntegration', tag: integrationTag, auth: true,
  summary: 'The connection state (never the secrets) and the webhook URL to give Cal.com',
  entry: 'functions/scheduler/get-integration.ts', access: { table: 'R' },
});

export const disconnectSchedulingIntegration = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/scheduler/integration', operationId: 'disconnectSchedulingIntegration', tag: integrationTag, auth: true,
  summary: 'Disconnect the scheduling integration (the built-in calendar books again)',
  entry: 'functions/scheduler/disconnect-integration.ts',
  successMessage: 'Scheduling integration disconnected', access: { table: 'RW' },
  errors: { 404: 'No scheduling integration is connected' },
});

export const calcomWebhook = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/scheduler/webhooks/calcom/{org_id}', operationId: 'receiveCalcomWebhook', tag: integrationTag, auth: false,
  summary: 'Cal.com booking webhooks (BOOKING_CREATED, BOOKING_RESCHEDULED, BOOKING_CANCELLED), verified with X-Cal-Signature-256',
  entry: 'functions/scheduler/calcom-webhook.ts', params: WebhookParams, body: CalcomWebhookBody,
  successMessage: 'Webhook processed', access: { table: 'RW', secrets: true, queues: ['event-fanout'] },
  errors: {
    401: 'X-Cal-Signature-256 is missing or is not the HMAC-SHA256 of the raw body keyed with the webhook secret (also for an unknown organization, answered the same way)',
  },
  headers: [{ name: 'X-Cal-Signature-256', required: true, description: 'Hex HMAC-SHA256 of the raw request body, keyed with the `webhook_secret` given when connecting Cal.com' }],
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  getAvailability.response = Availability;
  bookAppointment.response = Appointment;
  listAppointments.response = Appointment;
  getAppointment.response = Appointment;
  rescheduleAppointment.response = Appointment;
  cancelAppointment.response = Appointment;
  putWorkingHours.response = WorkingHours;
  getWorkingHours.response = WorkingHours;
  connectSchedulingIntegration.response = Integration;
  getSchedulingIntegration.response = Integration;
  calcomWebhook.response = CalcomWebhookResult;
}

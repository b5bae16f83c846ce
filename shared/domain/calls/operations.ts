import { named } from '../common/named';
import * as z from 'zod/mini';
import { defineOperation } from '../../http/operation';
import { IdParams, traceparentQuery, uuid } from '../common/schemas';
import { recordingKeys } from './recordings';
import { Call, CallListQuery, CreateCallBody } from './schemas';
import { lazy } from '../common/lazy';

const tag = 'Calls';
const telephonyTag = 'Telephony';
/** Reading a call signs its recording link: the signer must be allowed to read the object. */
const recordingsRead = { bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns } as const;

export const createCall = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/calls', operationId: 'createCall', tag, auth: true,
  summary: 'Place one outbound call: created `queued` and dialed by a queued job; 422 (`reason` do_not_call or opt_out) for a listed or opted-out number; at the concurrency limit a 429, or with `"queue": true` a 202 and the call waits for a slot (`queue_position`)',
  entry: 'functions/calls/create.ts', body: CreateCallBody,
  successMessage: 'Call queued successfully', access: { table: 'RW', queues: ['call-place', 'event-fanout'], ...recordingsRead },
  accepted: 'At the organization\'s concurrency limit with `"queue": true`: the call is created `queued` with `queue_position` and waits for a slot (placed first in, first out within the organization, or ended `queue_timeout` after `queue_timeout_seconds`)',
  acceptedMessage: 'Call waiting for a concurrency slot',
  errors: {
    422: 'The number is on the do-not-call list or the contact opted out (`error.details.reason` `do_not_call` or `opt_out`): nothing is placed',
    429: 'Over the API key\'s rate (`RATE_LIMITED`), or the organization\'s live calls are at its concurrency limit (`CONCURRENCY_LIMIT`, `error.details` `limit` and `in_progress`): nothing is placed; retry after `Retry-After` seconds',
  },
});

export const listCalls = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/calls', operationId: 'listCalls', tag, auth: true,
  summary: 'Calls, newest first; filters agent_id, campaign_id, contact_id, status, from and to (created time)',
  entry: 'functions/calls/list.ts', query: CallListQuery, list: true,
  access: { table: 'R', ...recordingsRead },
});

export const getCall = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/calls/{id}', operationId: 'getCall', tag, auth: true,
  summary: 'One call session, with its transcript, a fresh 15-minute recording link and its analysis',
  entry: 'functions/calls/get.ts', params: IdParams,
  access: { table: 'R', ...recordingsRead },
});

/** The call a Twilio callback is about, in the callback URL's query (signed with the URL). */
const TwilioCallQuery = /* @__PURE__ */ lazy(() => z.strictObject({ organization_id: uuid(), call_id: uuid(), traceparent: traceparentQuery() }));
/**
 * The status URL names the call for calls we place; a number's StatusCallback (incoming calls)
 * names none, and the call is found from its CallSid. One without the other is a 400.
 */
const TwilioStatusQuery = /* @__PURE__ */ lazy(() => z.strictObject({ organization_id: z.optional(uuid()), call_id: z.optional(uuid()), traceparent: traceparentQuery() }));
/** Twilio posts many form parameters; the signature covers them all, so none is refused here. */
const TwilioForm = /* @__PURE__ */ named('TwilioCallbackForm', () => z.record(z.string(), z.string()), 'The form parameters Twilio posts (CallSid, CallStatus, RecordingUrl, …), covered by X-Twilio-Signature');
/** What every Twilio callback may answer besides its success: Twilio sees these in its debugger. */
const twilioErrors = {
  401: 'X-Twilio-Signature is missing or does not verify, or cannot be checked because the platform has no Twilio credentials or PUBLIC_BASE_URL (the log names what to set)',
};
const Received = /* @__PURE__ */ named('TwilioCallbackReceipt', () => z.object({ received: z.boolean() }), 'Whether the callback changed anything');

export const receiveTwilioStatus = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/status', operationId: 'receiveTwilioStatus', tag: telephonyTag, auth: false,
  summary: 'Twilio call status callback (form-encoded, X-Twilio-Signature verified); queued for the call state machine. Calls we place carry `organization_id` and `call_id` in the URL; a number\'s StatusCallback (incoming calls) carries none, the call is found from its CallSid',
  entry: 'functions/telephony/twilio-status.ts', query: TwilioStatusQuery, body: TwilioForm, bodyFormat: 'form',
  access: { queues: ['call-events'], telephony: true }, errors: twilioErrors,
});

export const receiveTwilioRecording = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/recording', operationId: 'receiveTwilioRecording', tag: telephonyTag, auth: false,
  summary: 'Twilio recording status callback (form-encoded, X-Twilio-Signature verified); the recording is copied into the bucket',
  entry: 'functions/telephony/twilio-recording.ts', query: TwilioCallQuery, body: TwilioForm, bodyFormat: 'form',
  access: { queues: ['call-events'], telephony: true }, errors: { ...twilioErrors, 422: 'A completed recording without RecordingUrl or CallSid' },
});

export const getTwilioCallInstructions = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/twiml', operationId: 'getTwilioCallInstructions', tag: telephonyTag, auth: false,
  summary: 'TwiML for an answered call: <Connect><Stream> to the voice runtime (VOICE_RUNTIME_URL) with a short-lived stream token; X-Twilio-Signature verified',
  entry: 'functions/telephony/twilio-twiml.ts', query: TwilioCallQuery, body: TwilioForm, bodyFormat: 'form',
  rawResponse: true, rawContentType: 'text/xml', access: { table: 'R', telephony: true, tokens: true }, errors: twilioErrors,
});

export const getTwilioHoldInstructions = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/hold', operationId: 'getTwilioHoldInstructions', tag: telephonyTag, auth: false,
  summary: 'TwiML for an incoming call on hold at the concurrency limit (the waitUrl of its <Enqueue>; X-Twilio-Signature verified): hold music while it waits, a <Redirect> to its instructions once it holds a slot, <Leave/> once it ended or its overflow_queue_seconds are over (then ended `queue_timeout`)',
  entry: 'functions/telephony/twilio-hold.ts', query: TwilioCallQuery, body: TwilioForm, bodyFormat: 'form',
  rawResponse: true, rawContentType: 'text/xml', access: { table: 'RW', telephony: true, queues: ['call-analysis', 'event-fanout', 'campaign-dispatch'] }, errors: twilioErrors,
});

export const receiveTwilioInboundCall = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/inbound', operationId: 'receiveTwilioInboundCall', tag: telephonyTag, auth: false,
  summary: 'Twilio incoming-call webhook (a number\'s voice URL; X-Twilio-Signature verified): a call session `inbound` answered through the voice runtime by the agent the number\'s inbound webhook chooses (signed with its secret), else the number\'s `inbound_agent_id`; <Say> and hang up when the webhook refuses the call, <Reject/> when no agent can answer; at the organization\'s concurrency limit the number\'s overflow: <Reject/>, <Dial> its overflow_phone_number, or <Enqueue> on hold (each recorded as a call)',
  entry: 'functions/telephony/twilio-inbound.ts', body: TwilioForm, bodyFormat: 'form',
  rawResponse: true, rawContentType: 'text/xml', access: { table: 'RW', telephony: true, tokens: true, secrets: true, queues: ['event-fanout', 'call-analysis', 'campaign-dispatch'] },
  errors: { ...twilioErrors, 422: 'CallSid, To or From is missing' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createCall.response = Call;
  listCalls.response = Call;
  getCall.response = Call;
  receiveTwilioStatus.response = Received;
  receiveTwilioRecording.response = Received;
}

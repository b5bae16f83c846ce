import * as z from 'zod/mini';
import { defineOperation, type Access } from '../../http/operation';
import { lazy } from '../common/lazy';
import { named } from '../common/named';
import { traceparentQuery, uuid } from '../common/schemas';
import { recordingKeys } from './recordings';

/**
 * Twilio's callbacks of a warm transfer (calls/transfer-callbacks.ts): the person's call answered,
 * the key they pressed, their call's status, the conference's events. Each URL names the call and
 * the transfer (its index in the call's `transfers`) in its query, signed by Twilio with the rest.
 */
const TransferQuery = /* @__PURE__ */ lazy(() =>
  z.strictObject({
    organization_id: uuid(),
    call_id: uuid(),
    traceparent: traceparentQuery(),
    transfer: z.coerce.number().check(z.int(), z.minimum(0), z.maximum(1000)),
  }),
);
const TwilioForm = /* @__PURE__ */ named('TwilioTransferForm', () => z.record(z.string(), z.string()), 'The form parameters Twilio posts about a warm transfer\'s call or conference (CallSid, CallStatus, AnsweredBy, Digits, StatusCallbackEvent, …), covered by X-Twilio-Signature');
const Received = /* @__PURE__ */ named('TwilioTransferReceipt', () => z.object({ received: z.boolean() }), 'The callback was taken');
const tag = 'Telephony';
const errors = { 401: 'X-Twilio-Signature is missing or does not verify, or cannot be checked because the platform has no Twilio credentials or PUBLIC_BASE_URL (the log names what to set)' };
/**
 * What settling a transfer touches: the call (and its events, whose data is the call with a signed
 * recording link), the queues of an event and of a call's end, the carrier (sending the caller
 * back to the agent), tokens (the resumed session's).
 */
const settles: Access = { table: 'RW', telephony: true, tokens: true, bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, queues: ['event-fanout', 'call-analysis', 'campaign-dispatch', 'call-place'] };

export const receiveTwilioTransferAnswer = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/transfer-answer', operationId: 'receiveTwilioTransferAnswer', tag, auth: false,
  summary: 'Twilio: the person a warm transfer dialed answered (X-Twilio-Signature verified): the briefing in a one-key <Gather> (press 1 to accept), or <Hangup/> for a machine (AnsweredBy)',
  entry: 'functions/telephony/twilio-transfer-answer.ts', query: TransferQuery, body: TwilioForm, bodyFormat: 'form',
  rawResponse: true, rawContentType: 'text/xml', access: settles, errors,
});

export const receiveTwilioTransferGather = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/transfer-gather', operationId: 'receiveTwilioTransferGather', tag, auth: false,
  summary: 'Twilio <Gather action> of a warm transfer\'s briefing (X-Twilio-Signature verified): Digits 1 joins the person to the caller\'s conference; another key or none declines, and the caller goes back to the agent',
  entry: 'functions/telephony/twilio-transfer-gather.ts', query: TransferQuery, body: TwilioForm, bodyFormat: 'form',
  rawResponse: true, rawContentType: 'text/xml', access: settles, errors,
});

export const receiveTwilioTransferStatus = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/transfer-status', operationId: 'receiveTwilioTransferStatus', tag, auth: false,
  summary: 'Twilio status callback of the person\'s call of a warm transfer (X-Twilio-Signature verified): no answer, busy or a failure settles the transfer and sends the caller back to the agent; the end\'s minutes are charged',
  entry: 'functions/telephony/twilio-transfer-status.ts', query: TransferQuery, body: TwilioForm, bodyFormat: 'form',
  // The person's `initiated`/`ringing` callbacks make the briefing with the conversation model (calls/warm-transfer.ts, ensureBriefing).
  access: { ...settles, llm: true }, errors,
});

export const receiveTwilioTransferConference = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/transfer-conference', operationId: 'receiveTwilioTransferConference', tag, auth: false,
  summary: 'Twilio conference status callback of a warm transfer (X-Twilio-Signature verified): the conference\'s end ends an inbound call `transferred`, or, the caller having hung up while waiting, settles the transfer `failed`',
  entry: 'functions/telephony/twilio-transfer-conference.ts', query: TransferQuery, body: TwilioForm, bodyFormat: 'form',
  access: settles, errors,
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  receiveTwilioTransferStatus.response = Received;
  receiveTwilioTransferConference.response = Received;
}

import * as z from 'zod/mini';
import { defineOperation } from '../../http/operation';
import { lazy } from '../common/lazy';
import { named } from '../common/named';
import { traceparentQuery, uuid } from '../common/schemas';
import { recordingKeys } from '../calls/recordings';

/**
 * Twilio's `<Connect action>` of a relay call (relay/twiml.ts): requested when the
 * ConversationRelay session ends, it answers the call's next TwiML (relay/call-ending.ts). An HTTP
 * operation of the route registry like the other Twilio callbacks.
 */
const RelayActionQuery = /* @__PURE__ */ lazy(() =>
  z.strictObject({
    organization_id: uuid(),
    call_id: uuid(),
    traceparent: traceparentQuery(),
    attempt: z._default(z.coerce.number().check(z.int(), z.minimum(0), z.maximum(10)), 0),
  }),
);
const TwilioForm = /* @__PURE__ */ named('TwilioRelayActionForm', () => z.record(z.string(), z.string()), 'The form parameters Twilio posts when a ConversationRelay session ends (CallSid, SessionStatus, HandoffData, …), covered by X-Twilio-Signature');

export const receiveTwilioRelayAction = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/telephony/twilio/relay-action', operationId: 'receiveTwilioRelayAction', tag: 'Telephony', auth: false,
  summary: 'Twilio <Connect action> of a ConversationRelay call (X-Twilio-Signature verified): the next TwiML once the session ends: <Dial> for a transfer, <Hangup/> after end_call, a reconnect when the session ended on its own, an apology otherwise',
  entry: 'functions/relay/action.ts', query: RelayActionQuery, body: TwilioForm, bodyFormat: 'form',
  rawResponse: true, rawContentType: 'text/xml',
  errors: { 401: 'X-Twilio-Signature is missing or does not verify, or cannot be checked because the platform has no Twilio credentials or PUBLIC_BASE_URL (the log names what to set)' },
  // Verifies the signature (Twilio credentials); reads the call and its agent version; a reconnect signs a fresh token; the call's end goes through the calls service;
  // a warm transfer dials the person (the carrier) and asks the conversation model for the briefing.
  access: { table: 'RW', telephony: true, tokens: true, llm: true, bucket: 'R', bucketPrefixes: recordingKeys.grantPatterns, queues: ['call-analysis', 'event-fanout', 'campaign-dispatch', 'call-place'] },
});

import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { queue } from '../../adapters/queue';
import { telephony } from '../../adapters/telephony';
import { TwilioCredentialsMissing, twilioCredentialsFromEnvironment } from '../../adapters/telephony/twilio';
import { verifyTwilioSignature } from '../../adapters/telephony/twilio-signature';
import { config } from '../../config';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { UnauthorizedError, UnprocessableError, ValidationError } from '../../errors';
import { header } from '../common/header';
import type { RawBody } from '../common/raw-body';
import { logger } from '../../logger';
import type { CallEventMessage } from './lifecycle';
import type { CallItem } from './service';
import { createInboundCall } from './inbound';
import { enqueueTwiml, forwardTwiml, holdInstructions } from './inbound-overflow';
import { apologyTwiml, rejectTwiml, streamTwiml } from './voice-stream';
import { hangupTwiml, relayInstructions } from '../relay/twiml';

/**
 * Twilio's callbacks. For a call we placed, each URL carries the call (`organization_id`,
 * `call_id` in the query, signed with the rest of the URL); each request must carry a valid
 * `X-Twilio-Signature` over PUBLIC_BASE_URL + path + query and the form parameters (Twilio's
 * scheme), or it is a 401 and nothing happens. Status and recording callbacks are queued for the
 * call-events job (the same path as the simulated carrier's events), so Twilio gets its answer
 * at once and a redelivery changes nothing.
 */
export interface CallRef {
  organization_id: string;
  call_id: string;
}

/** Checks X-Twilio-Signature over PUBLIC_BASE_URL + path + query and the form parameters (401 when it does not hold). */
export async function verify(event: APIGatewayProxyEventV2, params: Record<string, string>): Promise<void> {
  const { base, authToken } = await signingSetup(event);
  const url = `${base.replace(/\/$/, '')}${event.rawPath}${event.rawQueryString ? `?${event.rawQueryString}` : ''}`;
  const signature = header(event, 'x-twilio-signature') ?? '';
  if (!signature || !verifyTwilioSignature(authToken, url, params, signature)) {
    throw new UnauthorizedError('Missing or invalid X-Twilio-Signature');
  }
}

/**
 * What a signature check needs: PUBLIC_BASE_URL (the URL Twilio signs) and the auth token. Without
 * them the check cannot run: that is the operator's configuration, never the caller's fault
 * (references.md), so the caller gets a 401 (the request is not verified) and the log says what to
 * set — not a 500, which reads as our failure and which Twilio would retry.
 */
async function signingSetup(event: APIGatewayProxyEventV2): Promise<{ base: string; authToken: string }> {
  const base = config().publicBaseUrl;
  let missing = base ? undefined : 'PUBLIC_BASE_URL (the public base URL Twilio calls, which its signature covers)';
  let authToken = '';
  if (!missing) {
    try {
      authToken = (await twilioCredentialsFromEnvironment()).authToken;
    } catch (err) {
      if (!(err instanceof TwilioCredentialsMissing)) throw err;
      missing = 'TWILIO_ACCOUNT_SID and TWILIO_AUTH_TOKEN (local) or TWILIO_SECRET_ARN (deployed)';
    }
  }
  if (missing) {
    logger.error(`A Twilio callback was refused with 401: its X-Twilio-Signature cannot be checked without Twilio's settings. Set ${missing}; with simulated telephony (TELEPHONY_PROVIDER unset) no Twilio callback is expected.`, { path: event.rawPath });
    throw new UnauthorizedError('X-Twilio-Signature cannot be verified: this deployment is not configured for Twilio');
  }
  return { base: base!, authToken };
}

/**
 * POST /telephony/twilio/status: a call status callback, queued for the state machine. A call we
 * placed is named in the URL's query; a number's StatusCallback (an incoming call: the URL names
 * no call) is queued by its CallSid, which the call-events job maps to the call through the
 * incoming call's marker (inbound.ts).
 */
export async function acceptTwilioStatus(event: APIGatewayProxyEventV2, ref: Partial<CallRef>, params: Record<string, string>): Promise<{ received: true }> {
  const missing = ref.organization_id && !ref.call_id ? 'call_id' : !ref.organization_id && ref.call_id ? 'organization_id' : undefined;
  if (missing) throw ValidationError.field(missing, 'is required with ' + (missing === 'call_id' ? 'organization_id' : 'call_id'));
  await verify(event, params);
  const status = telephony().parseStatusEvent(params);
  const message: CallEventMessage = ref.organization_id && ref.call_id
    ? { kind: 'status', organization_id: ref.organization_id, call_id: ref.call_id, provider: 'twilio', event: status }
    : { kind: 'inbound-status', provider: 'twilio', event: status };
  await queue().send('call-events', message);
  return { received: true };
}

/**
 * A 422 naming each of `names` that Twilio's form left out or empty, `details.fields` shaped as
 * every validation error's (shared/http/middleware/validate.ts): `{ path, message, in: 'body' }`.
 */
function requireParams(params: Record<string, string>, names: string[]): void {
  const missing = names.filter((name) => !params[name]);
  if (!missing.length) return;
  const fields = missing.map((path) => ({ path, message: 'is required', in: 'body' as const }));
  throw new UnprocessableError(`${missing.join(', ')} ${missing.length > 1 ? 'are' : 'is'} required`, { fields });
}

/** POST /telephony/twilio/recording: a finished recording, queued to be copied into the bucket. */
export async function acceptTwilioRecording(event: APIGatewayProxyEventV2, ref: CallRef, params: Record<string, string>): Promise<{ received: true }> {
  await verify(event, params);
  if (params.RecordingStatus && params.RecordingStatus !== 'completed') return { received: true };
  requireParams(params, ['RecordingUrl', 'CallSid']);
  const message: CallEventMessage = {
    kind: 'recording', organization_id: ref.organization_id, call_id: ref.call_id, provider_call_id: params.CallSid, recording_url: params.RecordingUrl,
  };
  await queue().send('call-events', message);
  return { received: true };
}

/**
 * POST /telephony/twilio/twiml: the call instructions once the callee answers: connect the
 * call's media to the agent's voice runtime (VOICE_RUNTIME_URL) with <Connect><Stream>, passing
 * a stream token, the call, organization and agent, and Twilio's AnsweredBy (machine detection)
 * as stream parameters (voice-stream.ts). Without a voice runtime configured, or for a call we do
 * not know, the instructions say so and hang up.
 */
export async function twilioInstructions(event: APIGatewayProxyEventV2, ref: CallRef, params: Record<string, string>): Promise<RawBody> {
  await verify(event, params);
  const call = await getItem<CallItem>(keys.call(ref.organization_id, ref.call_id));
  const runtime = config().voiceRuntimeUrl;
  if (!call || !runtime) {
    logger.error('Twilio asked for call instructions that cannot be given', { call_id: ref.call_id, known: !!call, voice_runtime: !!runtime });
    return apologyTwiml();
  }
  const relay = await relayInstructions(call);
  if (relay) return relay;
  return streamTwiml(runtime, {
    organization_id: call.organization_id, call_id: call.id, agent_id: call.agent_id, direction: call.direction, answered_by: params.AnsweredBy || undefined,
  });
}

/**
 * POST /telephony/twilio/inbound: a call to one of our numbers (the number's voice URL). Signed
 * like every Twilio callback (the URL is PUBLIC_BASE_URL + the path; no query). The agent the
 * number's routing webhook chooses, else the number's inbound agent, answers it (inbound.ts): a
 * call session `inbound` is created and the call's media streams to the voice runtime with a
 * stream token; a call the webhook refuses is said its message and hung up; a number with no
 * agent (or none active), or no voice runtime configured, answers <Reject/>, before any session is created.
 */
export async function answerTwilioIncomingCall(event: APIGatewayProxyEventV2, params: Record<string, string>): Promise<RawBody> {
  await verify(event, params);
  requireParams(params, ['CallSid', 'To', 'From']);
  const runtime = config().voiceRuntimeUrl;
  if (!runtime) {
    logger.error('An incoming call was rejected: no voice runtime is configured (VOICE_RUNTIME_URL)', { provider_call_id: params.CallSid });
    return rejectTwiml();
  }
  const answer = await createInboundCall({ to: params.To, from: params.From, providerCallId: params.CallSid, provider: 'twilio' });
  // At the concurrency limit, as the number's overflow says: forwarded, or on hold in the queue (inbound-overflow.ts).
  if (answer.answer === 'forward') return forwardTwiml(answer.to);
  if (answer.answer === 'queue') return enqueueTwiml(answer.call);
  if (answer.answer === 'reject') {
    logger.info('An incoming call was rejected', { reason: answer.reason, organization_id: answer.organization_id, provider_call_id: params.CallSid, routing: answer.routing });
    // Refused by the number's routing webhook: answered to say its message, then hung up (no session).
    return answer.message ? hangupTwiml(answer.message) : rejectTwiml();
  }
  const { call } = answer;
  const relay = await relayInstructions(call);
  if (relay) return relay;
  return streamTwiml(runtime, { organization_id: call.organization_id, call_id: call.id, agent_id: call.agent_id, direction: 'inbound' });
}

/**
 * POST /telephony/twilio/hold: the `waitUrl` of an incoming call on hold in the organization's
 * queue (its number's overflow is `queue`), asked when it enters the queue and after each round of
 * music: music while it waits, its instructions once it holds a slot, `<Leave/>` once it has ended
 * or its wait is over (inbound-overflow.ts holdInstructions).
 */
export async function twilioHold(event: APIGatewayProxyEventV2, ref: CallRef, params: Record<string, string>): Promise<RawBody> {
  await verify(event, params);
  return holdInstructions(ref.organization_id, ref.call_id);
}

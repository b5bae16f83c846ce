import { activeTraceparent } from '../../telemetry/tracing';
import { randomBytes } from 'node:crypto';
import { signToken } from '../../adapters/signed-token';
import { rawBody, type RawBody } from '../common/raw-body';

/**
 * The TwiML that hands an answered call to the voice runtime, outbound and inbound alike:
 * `<Connect><Stream url=VOICE_RUNTIME_URL>` with the stream's custom parameters, which Twilio
 * passes to the runtime in the `start` message (`start.customParameters`). The runtime admits
 * the stream only with a valid `token` (signToken('voice-stream', {organization_id, call_id}),
 * five minutes: Twilio opens the stream within seconds of reading the TwiML) and trusts the
 * token's claims over the plain parameters, which are there for logs and tools.
 */
export const STREAM_TOKEN_TTL_SECONDS = 300;

/** The `<Parameter>` names the voice runtime reads from `start.customParameters`. */
export const STREAM_PARAMETERS = {
  token: 'token',
  organizationId: 'organization_id',
  callId: 'call_id',
  agentId: 'agent_id',
  direction: 'direction',
  /** Twilio's AnsweredBy on an answered outbound call with machine detection (`human`, `machine_end_beep`, …). */
  answeredBy: 'answered_by',
  /** A stream that resumes the conversation after a warm transfer the person did not take: the transfer's index in the call's `transfers` (calls/warm-transfer.ts). */
  resume: 'resume',
} as const;

export interface StreamTarget {
  organization_id: string;
  call_id: string;
  agent_id: string;
  direction: 'inbound' | 'outbound';
  /** Twilio's AnsweredBy, when detection ran. */
  answered_by?: string;
  /** The index of the warm transfer the caller comes back from (the stream resumes the conversation). */
  resume?: string;
}

/** Text escaped for XML content and attribute values. */
export const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * The stream token's `traceparent` claim when tracing is on: the W3C trace context of the request
 * that answered the call, so the session's turns (the relay's, the voice runtime's) continue the
 * call's trace. In the token, read where the session is admitted, before any message: never raced
 * by the first prompt, and signed with the rest.
 */
export function traceClaim(): { traceparent?: string } {
  const traceparent = activeTraceparent();
  return traceparent ? { traceparent } : {};
}

/** A TwiML document around `inner`. */
export const twiml = (inner: string): RawBody => rawBody('text/xml', `<?xml version="1.0" encoding="UTF-8"?><Response>${inner}</Response>`);

/** What a call that cannot reach an agent hears. */
export const apologyTwiml = (): RawBody => twiml('<Say>Sorry, this call cannot be connected.</Say><Hangup/>');

/** Refuses an incoming call before it is answered (the caller hears busy; nothing is billed). */
export const rejectTwiml = (): RawBody => twiml('<Reject/>');

/** `<Connect><Stream>` to the voice runtime at `runtimeUrl`, with a fresh stream token. */
export async function streamTwiml(runtimeUrl: string, target: StreamTarget): Promise<RawBody> {
  // A nonce makes each stream's token its own (one use each): two send-backs of one transfer within the same second (its
  // outcome's, then a late join's) would otherwise sign the same token, and the second stream be refused as already used.
  const token = await signToken('voice-stream', {
    organization_id: target.organization_id, call_id: target.call_id, ...(target.resume !== undefined ? { resume: target.resume } : {}), nonce: randomBytes(9).toString('base64url'), ...traceClaim(),
  }, STREAM_TOKEN_TTL_SECONDS);
  const parameters: [string, string | undefined][] = [
    [STREAM_PARAMETERS.token, token],
    [STREAM_PARAMETERS.organizationId, target.organization_id],
    [STREAM_PARAMETERS.callId, target.call_id],
    [STREAM_PARAMETERS.agentId, target.agent_id],
    [STREAM_PARAMETERS.direction, target.direction],
    [STREAM_PARAMETERS.answeredBy, target.answered_by],
    [STREAM_PARAMETERS.resume, target.resume],
  ];
  const inner = parameters
    .filter((p): p is [string, string] => !!p[1])
    .map(([name, value]) => `<Parameter name="${name}" value="${xml(value)}"/>`)
    .join('');
  return twiml(`<Connect><Stream url="${xml(runtimeUrl)}">${inner}</Stream></Connect>`);
}

import { relayConnections } from '../../adapters/relay-connections';
import { verifyToken } from '../../adapters/signed-token';
import { twilioCredentialsFromEnvironment } from '../../adapters/telephony/twilio';
import { verifyTwilioSignature } from '../../adapters/telephony/twilio-signature';
import { clockMs, clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import { effectiveModel } from '../agents/models';
import type { CallItem } from '../calls/service';
import { openVoiceSession } from '../calls/voice-session';
import { resumeGreeting } from '../calls/transfer-item';
import { STREAM_PARAMETERS } from '../calls/voice-stream';
import { TRACEPARENT_PATTERN } from '../../telemetry/tracing';
import type { Contact } from '../contacts/schemas';
import { conversationRef } from '../conversations/types';
import { currentAgentOf } from '../conversations/segments';
import { findConversationAgent } from '../agents/service';
import { conversationSetup, loadConversationTimezone } from '../conversations/variables';
import type { SetupMessage } from './protocol';
import { createRelayState, noteRelayState, type RelayAgent, type RelayState } from './state';
import { ivrInstructions } from './tool-calls';
import { latestSessionMs, sessionSeq, turnSeq, turnWrite } from './turns';
import { isRelayAgent, relayCallAgent, relayConnectUrl } from './twiml';

export type ConnectAnswer = { admitted: true } | { admitted: false; status: 401 | 403 | 410; reason: string };

/** Twilio is the carrier: it opens the sessions, signs them and requests the `<Connect action>` when each ends. */
const twilioRunsSessions = (): boolean => (process.env.TELEPHONY_PROVIDER ?? '') === 'twilio';

/**
 * Whether Twilio signed the upgrade (X-Twilio-Signature: HMAC-SHA1 of the `wss://` URL it opened,
 * query included, keyed by the auth token). The URL is rebuilt from RELAY_URL and the token as the
 * TwiML gave it. With Twilio as the carrier the signature is required (credentials missing: the
 * operator's problem, logged, and the connection refused); with another carrier there is no Twilio
 * to sign (the local terminal client) and the one-use token alone admits.
 */
async function signedByTwilio(token: string, signature: string | undefined): Promise<boolean> {
  if (!twilioRunsSessions()) return true;
  const relayUrl = process.env.RELAY_URL;
  let authToken: string;
  try {
    authToken = (await twilioCredentialsFromEnvironment()).authToken;
  } catch (err) {
    logger.error('A relay connection was refused: the Twilio credentials to check its signature are not set', { error: err as Error });
    return false;
  }
  if (!relayUrl) {
    logger.error('A relay connection was refused: RELAY_URL is not set, so its signature cannot be checked');
    return false;
  }
  return !!signature && verifyTwilioSignature(authToken, relayConnectUrl(relayUrl, token), {}, signature);
}

/**
 * `$connect`: admits the connection only with Twilio's signature and a valid, unused token of a
 * live call whose agent (at the call's recorded version) uses the relay.
 */
export async function connectRelay(connectionId: string, token: string | undefined, headers: Record<string, string | undefined> = {}): Promise<ConnectAnswer> {
  if (!token) return { admitted: false, status: 401, reason: 'A relay connection needs its call\'s one-use token: open the url of the call\'s <ConversationRelay> (…/relay?token=…).' };
  const claims = await verifyToken('voice-stream', token);
  if (!claims?.organization_id || !claims.call_id) return { admitted: false, status: 401, reason: 'The relay token is invalid or expired.' };
  const signature = Object.entries(headers).find(([k]) => k.toLowerCase() === 'x-twilio-signature')?.[1];
  if (!(await signedByTwilio(token, signature))) return { admitted: false, status: 401, reason: 'Missing or invalid X-Twilio-Signature.' };
  const orgId = claims.organization_id;
  const call = await getItem<CallItem>(keys.call(orgId, claims.call_id));
  if (!call) return { admitted: false, status: 403, reason: 'The relay token names a call that does not exist.' };
  if (call.status === 'ended') return { admitted: false, status: 410, reason: 'The call has ended.' };
  const [starting, contact] = await Promise.all([relayCallAgent(call), call.contact_id ? getItem<Contact>(keys.contact(orgId, call.contact_id)) : Promise.resolve(undefined)]);
  // A call handed off before this session (a reconnect, a warm transfer's return) goes on with the agent handling it (its last segment).
  const current = currentAgentOf(call);
  const agent = call.segments?.length ? (await findConversationAgent(orgId, current.agent_id, current.agent_version)) ?? starting : starting;
  if (!starting || !isRelayAgent(starting) || !agent) return { admitted: false, status: 403, reason: 'The call\'s agent does not use the relay (voice_pipeline).' };
  // One connection per token, ever (the same marker as a media stream's: a conditional write).
  const admission = await openVoiceSession(orgId, call.id, token);
  if (admission !== 'admitted') return { admitted: false, status: 410, reason: admission === 'token_used' ? 'The relay token was used already: each token opens one connection.' : 'The call has ended.' };
  const timezone = await loadConversationTimezone(orgId, agent.id, contact);
  const setup = conversationSetup({ agent, contact, dynamicVariables: call.dynamic_variables ?? {}, beginMessage: call.begin_message ?? agent.begin_message ?? '', timezone, now: clockNow() });
  const startSpeaker = agent.start_speaker === 'user' ? 'user' : 'agent';
  const ivrOptions = agent.ivr_options as Record<string, unknown> | null | undefined;
  const ivr = ivrOptions && ivrOptions.enabled !== false ? { goal: String(ivrOptions.goal ?? '').slice(0, 1000) } : null;
  const relayAgent: RelayAgent = {
    model: effectiveModel(agent),
    temperature: agent.temperature ?? 0.7,
    knowledge_base: agent.knowledge_base || null,
    selected_tools: (agent.selected_tools ?? []) as Record<string, unknown>[],
    max_call_duration_ms: agent.max_call_duration_ms ?? 0,
    ring_duration_ms: agent.ring_duration_ms ?? 30_000,
    ivr,
    start_speaker: startSpeaker,
    handoff_agents: agent.handoff_agents ?? [],
  };
  const nowMs = clockMs();
  // A reconnect's session: the call has turns of an earlier one (the greeting was that one's).
  const latest = await latestSessionMs(call.id);
  const resumed = latest !== undefined;
  const state: RelayState = {
    connection_id: connectionId,
    organization_id: orgId,
    call_id: call.id,
    agent_id: call.agent_id,
    agent_version: typeof call.agent_version === 'number' ? call.agent_version : null,
    connected_at_ms: nowMs,
    started_ms: call.answered_at ? Date.parse(call.answered_at) : nowMs,
    // After every earlier session's turns, even one admitted within the same millisecond (a clock that stood still, a fast reconnect).
    session_seq: sessionSeq(latest !== undefined && latest >= nowMs ? latest + 1 : nowMs, connectionId),
    ...(call.provider_call_id ? { call_sid: call.provider_call_id } : {}),
    ...(twilioRunsSessions() ? { action_follows: true as const } : {}),
    ...(claims.traceparent && TRACEPARENT_PATTERN.test(claims.traceparent) ? { trace_parent: claims.traceparent } : {}),
    agent: relayAgent,
    system: setup.system + (ivr ? ivrInstructions(ivr.goal) : ''),
    conversation: { ...conversationRef('call', call, setup.timezone), agent_id: agent.id },
    ...(call.segments?.length ? { segments: call.segments } : {}),
    turn: 0,
    turn_done: 0,
  };
  // ConversationRelay speaks the welcome greeting itself (the first session only): it is the agent's turn 0. A session that
  // resumes the conversation after a warm transfer (the token's `resume`) greets with what became of the transfer (relay/twiml.ts).
  const resume = claims.resume !== undefined ? Number(claims.resume) : undefined;
  const greeting = resume !== undefined ? resumeGreeting(call.transfers?.[resume]?.outcome) : startSpeaker === 'agent' && !resumed ? setup.beginMessage : '';
  if (!greeting) {
    await createRelayState(state, [], resumed ? undefined : []); // a reconnect's history is read by its first turn
    return { admitted: true };
  }
  const seq = turnSeq(state, 0);
  const messages = [{ role: 'agent' as const, content: greeting }];
  const lines = [{ role: 'agent' as const, text: greeting, time_sec: Math.max(0, Math.round((nowMs - state.started_ms) / 100) / 10) }];
  await createRelayState({ ...state, last_turn: seq }, [turnWrite(state, { seq, turn: 0, messages, lines, tool_calls: [] })], resumed ? undefined : messages);
  return { admitted: true };
}

/** `setup`: the session's call must be the token's (a token replayed on another call is closed). */
export async function setUp(state: RelayState, setup: SetupMessage): Promise<void> {
  const params = setup.customParameters ?? {};
  const mismatch =
    (params[STREAM_PARAMETERS.callId] !== undefined && params[STREAM_PARAMETERS.callId] !== state.call_id) ||
    (params[STREAM_PARAMETERS.organizationId] !== undefined && params[STREAM_PARAMETERS.organizationId] !== state.organization_id) ||
    (state.call_sid && setup.callSid && setup.callSid !== state.call_sid);
  if (mismatch) {
    logger.warn('A relay connection\'s setup names another call: closed', { call_id: state.call_id });
    await relayConnections().close(state.connection_id);
    return;
  }
  // Not a change any turn reads: no new version, so a model request the first prompt started stays current.
  await noteRelayState(state.connection_id, { set_up: true, ...(setup.callSid ? { call_sid: setup.callSid } : {}) });
}

import { withTraceQuery } from '../../telemetry/tracing';
import { randomBytes } from 'node:crypto';
import { signToken } from '../../adapters/signed-token';
import { clockNow } from '../../clock';
import { config } from '../../config';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import { logger } from '../../logger';
import type { Agent } from '../agents/schemas';
import { findConversationAgent } from '../agents/service';
import type { CallItem } from '../calls/service';
import { resumeGreeting } from '../calls/transfer-item';
import { apologyTwiml, STREAM_PARAMETERS, STREAM_TOKEN_TTL_SECONDS, traceClaim, twiml } from '../calls/voice-stream';
import type { Contact } from '../contacts/schemas';
import { conversationSetup, loadConversationTimezone } from '../conversations/variables';
import type { RawBody } from '../common/raw-body';

/**
 * The instructions that hand an answered call of a `relay` agent to Twilio ConversationRelay:
 * `<Connect action=…><ConversationRelay>` with the agent's `voice_id` as `voice`, its `language`,
 * the call's filled begin message as `welcomeGreeting` (none when the caller speaks first, and none
 * on a reconnect), keypresses on (`dtmfDetection`), and a one-use token twice: in the URL's query,
 * which the WebSocket API's `$connect` reads (Twilio opens the URL as given), and as a
 * `<Parameter>`, which Twilio passes in `setup.customParameters` and the relay checks against the
 * connection's. The `action` is where Twilio goes when the session ends (relay/call-ending.ts):
 * without one, Twilio would find no next verb and hang up.
 */

/** The agent's `voice_pipeline`: `realtime` (the default) or `relay`. */
export const isRelayAgent = (agent: { voice_pipeline?: string | null } | undefined): boolean => agent?.voice_pipeline === 'relay';

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The path of the `<Connect action>` callback (relay/action-operations.ts). */
export const RELAY_ACTION_PATH = '/api/v1/telephony/twilio/relay-action';

/** The WebSocket URL Twilio opens for a token: RELAY_URL with `?token=` (what `$connect` checks the signature over). */
export function relayConnectUrl(relayUrl: string, token: string): string {
  const url = new URL(relayUrl);
  url.searchParams.set('token', token);
  return url.toString();
}

/** The `<Connect action>` URL of a call's session: the call and the session's number in the query (signed by Twilio with the rest). */
export function relayActionUrl(call: Pick<CallItem, 'organization_id' | 'id'>, attempt: number): string {
  const base = config().publicBaseUrl;
  if (!base) throw new Error('PUBLIC_BASE_URL must be set for ConversationRelay calls (their <Connect action> URL)');
  const query = new URLSearchParams({ organization_id: call.organization_id, call_id: call.id, attempt: String(attempt) });
  return withTraceQuery(`${base.replace(/\/$/, '')}${RELAY_ACTION_PATH}?${query.toString()}`);
}

/**
 * The ConversationRelay TwiML for `call` of `agent`, connecting to `relayUrl` (RELAY_URL); `attempt`
 * counts reconnects (0: the first session). `resume`: the session resumes the conversation after
 * the warm transfer of that index (calls/warm-transfer.ts): its welcome greeting says the person
 * could not take the call, and the token carries the marker (connect.ts files the greeting).
 */
export async function relayTwiml(relayUrl: string, call: CallItem, agent: Agent & { language?: string }, attempt = 0, options: { resume?: number } = {}): Promise<RawBody> {
  const contact = call.contact_id ? await getItem<Contact>(keys.contact(call.organization_id, call.contact_id)) : undefined;
  const setup = conversationSetup({
    agent,
    contact,
    dynamicVariables: call.dynamic_variables ?? {},
    beginMessage: call.begin_message ?? agent.begin_message ?? '',
    timezone: await loadConversationTimezone(call.organization_id, agent.id, contact),
    now: clockNow(),
  });
  const resume = options.resume;
  // A nonce makes each session's token its own: a reconnect signed within the same second as the call's last token (a socket dropped
  // right after the answer, a refused session retried at once) would otherwise be that token again, already used, and refused.
  const token = await signToken('voice-stream', { organization_id: call.organization_id, call_id: call.id, ...(resume !== undefined ? { resume: String(resume) } : {}), nonce: randomBytes(9).toString('base64url'), ...traceClaim() }, STREAM_TOKEN_TTL_SECONDS);
  const greeting = resume !== undefined ? resumeGreeting(call.transfers?.[resume]?.outcome) : attempt === 0 && (agent.start_speaker ?? 'agent') !== 'user' ? setup.beginMessage : '';
  const attributes: [string, string | undefined][] = [
    ['url', relayConnectUrl(relayUrl, token)],
    ['welcomeGreeting', greeting || undefined],
    ['voice', agent.voice_id?.trim() || undefined],
    ['language', agent.language?.trim() || 'en-US'],
    ['dtmfDetection', 'true'],
    ['interruptible', 'any'],
  ];
  const parameters: [string, string][] = [
    [STREAM_PARAMETERS.token, token],
    [STREAM_PARAMETERS.organizationId, call.organization_id],
    [STREAM_PARAMETERS.callId, call.id],
    [STREAM_PARAMETERS.agentId, call.agent_id],
    ...(resume !== undefined ? [[STREAM_PARAMETERS.resume, String(resume)] as [string, string]] : []),
  ];
  const attrs = attributes.filter((a): a is [string, string] => !!a[1]).map(([n, v]) => ` ${n}="${xml(v)}"`).join('');
  const params = parameters.map(([n, v]) => `<Parameter name="${n}" value="${xml(v)}"/>`).join('');
  return twiml(`<Connect action="${xml(relayActionUrl(call, attempt))}"><ConversationRelay${attrs}>${params}</ConversationRelay></Connect>`);
}

/** The agent a relay call runs: the version the call recorded (a pinned or the published one), as a Realtime call's. */
export const relayCallAgent = (call: Pick<CallItem, 'organization_id' | 'agent_id' | 'agent_version'>) => findConversationAgent(call.organization_id, call.agent_id, call.agent_version);

/**
 * A call whose agent (at the call's recorded version) uses the relay is handed to ConversationRelay
 * at RELAY_URL; undefined for a Realtime agent.
 */
export async function relayInstructions(call: CallItem): Promise<RawBody | undefined> {
  const agent = await relayCallAgent(call);
  if (!isRelayAgent(agent)) return undefined;
  const url = process.env.RELAY_URL;
  if (!url) {
    logger.error('A relay agent\'s call cannot be connected: RELAY_URL is not set', { call_id: call.id });
    return apologyTwiml();
  }
  return relayTwiml(url, call, agent!);
}

export const dialTwiml = (to: string, timeoutSeconds: number): RawBody => twiml(`<Dial timeout="${timeoutSeconds}">${xml(to)}</Dial>`);
export const hangupTwiml = (say?: string): RawBody => twiml(`${say ? `<Say>${xml(say)}</Say>` : ''}<Hangup/>`);

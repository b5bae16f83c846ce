import { signToken } from '../../adapters/signed-token';
import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { getItem } from '../../db/store';
import type { Agent } from '../agents/schemas';
import type { CallItem } from '../calls/service';
import { STREAM_PARAMETERS, STREAM_TOKEN_TTL_SECONDS, twiml } from '../calls/voice-stream';
import type { Contact } from '../contacts/schemas';
import { conversationSetup, loadConversationTimezone } from '../conversations/variables';
import type { RawBody } from '../common/raw-body';

/**
 * The instructions that hand an answered call of a `relay` agent to Twilio ConversationRelay:
 * `<Connect><ConversationRelay>` with the agent's `voice_id` as `voice`, its `language`, the
 * call's filled begin message as `welcomeGreeting` (none when the caller speaks first), keypresses
 * on (`dtmfDetection`), and a one-use token twice: in the URL's query, which the WebSocket API's
 * `$connect` reads (Twilio opens the URL as given), and as a `<Parameter>`, which Twilio passes in
 * `setup.customParameters` and the relay checks against the connection's.
 */

/** The agent's `voice_pipeline`: `realtime` (the default) or `relay`. */
export const isRelayAgent = (agent: { voice_pipeline?: string | null } | undefined): boolean => agent?.voice_pipeline === 'relay';

const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The ConversationRelay TwiML for `call` of `agent`, connecting to `relayUrl` (RELAY_URL). */
export async function relayTwiml(relayUrl: string, call: CallItem, agent: Agent & { language?: string }): Promise<RawBody> {
  const contact = call.contact_id ? await getItem<Contact>(keys.contact(call.organization_id, call.contact_id)) : undefined;
  const setup = conversationSetup({
    agent,
    contact,
    dynamicVariables: call.dynamic_variables ?? {},
    beginMessage: call.begin_message ?? agent.begin_message ?? '',
    timezone: await loadConversationTimezone(call.organization_id, agent.id, contact),
    now: clockNow(),
  });
  const token = await signToken('voice-stream', { organization_id: call.organization_id, call_id: call.id }, STREAM_TOKEN_TTL_SECONDS);
  const url = new URL(relayUrl);
  url.searchParams.set('token', token);
  const greeting = (agent.start_speaker ?? 'agent') !== 'user' ? setup.beginMessage : '';
  const attributes: [string, string | undefined][] = [
    ['url', url.toString()],
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
  ];
  const attrs = attributes.filter((a): a is [string, string] => !!a[1]).map(([n, v]) => ` ${n}="${xml(v)}"`).join('');
  const params = parameters.map(([n, v]) => `<Parameter name="${n}" value="${xml(v)}"/>`).join('');
  return twiml(`<Connect><ConversationRelay${attrs}>${params}</ConversationRelay></Connect>`);
}

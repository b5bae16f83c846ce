import { keys } from '../shared/db/keys';
import { getItem } from '../shared/db/store';
import type { Agent } from '../shared/domain/agents/schemas';
import type { CallItem } from '../shared/domain/calls/service';
import { conversationRef } from '../shared/domain/conversations/types';
import type { Contact } from '../shared/domain/contacts/schemas';
import type { ConversationRef } from '../shared/domain/conversations/types';
import { conversationSetup, loadConversationTimezone } from '../shared/domain/conversations/variables';
import { clockNow } from '../shared/clock';

/** Everything one call's session needs, read once when its stream is admitted. */
export interface CallContext {
  call: CallItem;
  agent: Agent;
  contact: Contact | undefined;
  /** The agent's knowledge base when it names one that exists. */
  knowledgeBaseId: string | null;
  /** The filled prompt: the model's instructions. */
  instructions: string;
  /** The filled begin message ('' for none). */
  beginMessage: string;
  /** The filled voicemail message ('' for none). */
  voicemailMessage: string;
  conversation: ConversationRef;
}

/** Reads the call, its agent, contact and knowledge base; undefined when the call or its agent is gone. */
export async function loadCallContext(orgId: string, callId: string): Promise<CallContext | undefined> {
  const call = await getItem<CallItem>(keys.call(orgId, callId));
  if (!call) return undefined;
  const [agent, contact] = await Promise.all([
    getItem<Agent>(keys.agent(orgId, call.agent_id)),
    call.contact_id ? getItem<Contact>(keys.contact(orgId, call.contact_id)) : Promise.resolve(undefined),
  ]);
  if (!agent) return undefined;
  const kb = agent.knowledge_base ? await getItem<{ id: string; deleting_at?: string }>(keys.knowledgeBase(orgId, agent.knowledge_base)) : undefined;
  // One place makes a conversation's variables and texts (variables.ts). The call keeps the begin
  // message it was placed with (service.ts copies it); the agent's is the fallback.
  const setup = conversationSetup({
    agent,
    contact,
    dynamicVariables: call.dynamic_variables ?? {},
    beginMessage: call.begin_message ?? agent.begin_message ?? '',
    timezone: await loadConversationTimezone(orgId, agent.id, contact),
    now: clockNow(),
  });
  return {
    call,
    agent,
    contact,
    knowledgeBaseId: kb && !kb.deleting_at ? agent.knowledge_base : null,
    instructions: setup.system,
    beginMessage: setup.beginMessage,
    voicemailMessage: setup.voicemailMessage,
    conversation: conversationRef('call', call, setup.timezone),
  };
}

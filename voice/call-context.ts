import { findConversationAgent } from '../shared/domain/agents/service';
import type { Agent } from '../shared/domain/agents/schemas';
import { findCallItem, type CallItem } from '../shared/domain/calls/service';
import { findContact } from '../shared/domain/contacts/service';
import type { Contact } from '../shared/domain/contacts/schemas';
import { currentAgentOf, segmentsOf, type Segment } from '../shared/domain/conversations/segments';
import { conversationRef, type ConversationRef } from '../shared/domain/conversations/types';
import { conversationSetup, loadConversationTimezone } from '../shared/domain/conversations/variables';
import { knowledgeBaseExists } from '../shared/domain/rag/service';
import { clockNow } from '../shared/clock';

/** Everything one call's session needs, read once when its stream is admitted. */
export interface CallContext {
  call: CallItem;
  /** The agent handling the call now: its first agent, or the one it was last handed to (voice/handoff.ts). */
  agent: Agent;
  /** That agent's version (null: its draft). */
  agentVersion: number | null;
  /** Who handled the call from when (segments.ts): the chain a hand-off is checked against, and grows. */
  segments: Segment[];
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

/** Reads the call, its agent, contact and knowledge base (through their services); undefined when the call or its agent is gone. */
export async function loadCallContext(orgId: string, callId: string): Promise<CallContext | undefined> {
  // Each read goes through its area's service: the runtime knows no keys.
  const call = await findCallItem(orgId, callId);
  if (!call) return undefined;
  // A call handed to another agent (a stream resumed after a warm transfer) goes on with the agent it was handed to.
  const current = currentAgentOf(call);
  const [agent, contact] = await Promise.all([
    findConversationAgent(orgId, current.agent_id, current.agent_version),
    call.contact_id ? findContact(orgId, call.contact_id) : Promise.resolve(undefined),
  ]);
  if (!agent) return undefined;
  const kbExists = agent.knowledge_base ? await knowledgeBaseExists(orgId, agent.knowledge_base) : false;
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
    agentVersion: current.agent_version,
    segments: segmentsOf({ ...call, started_at: call.answered_at ?? call.started_at }),
    contact,
    knowledgeBaseId: kbExists ? agent.knowledge_base : null,
    instructions: setup.system,
    beginMessage: setup.beginMessage,
    voicemailMessage: setup.voicemailMessage,
    conversation: { ...conversationRef('call', call, setup.timezone), agent_id: agent.id },
  };
}

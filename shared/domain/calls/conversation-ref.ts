import type { ConversationRef } from '../conversations/types';
import type { CallItem } from './service';

/** The conversation a call's tools run for (webhook tools receive it as `conversation`). */
export function callConversation(call: Pick<CallItem, 'id' | 'organization_id' | 'agent_id' | 'contact_id' | 'dynamic_variables' | 'metadata'>): ConversationRef {
  return {
    type: 'call',
    id: call.id,
    organization_id: call.organization_id,
    agent_id: call.agent_id,
    contact_id: call.contact_id ?? null,
    dynamic_variables: call.dynamic_variables ?? {},
    metadata: call.metadata ?? {},
  };
}

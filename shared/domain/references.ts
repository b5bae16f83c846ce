import { keys } from '../db/keys';
import type { Guard } from '../db/store';
import { ValidationError } from '../errors';

/**
 * Guards that a write may only land while the resources it points to exist in the same
 * organization. They run inside the write's transaction, so a reference can never be
 * written to something deleted a moment before.
 */
export const references = {
  agent: (orgId: string, agentId: string, path = 'agent_id'): Guard => ({
    key: keys.agent(orgId, agentId),
    onFail: () => ValidationError.field(path, `agent ${agentId} does not exist in this organization`),
  }),
  tool: (orgId: string, toolId: string, path: string): Guard => ({
    key: keys.tool(orgId, toolId),
    // A tool being deleted (see deleteTool) can no longer be selected.
    condition: 'attribute_exists(pk) AND attribute_not_exists(deleting_at)',
    onFail: () => ValidationError.field(path, `tool ${toolId} does not exist in this organization`),
  }),
  widget: (orgId: string, widgetId: string, path = 'widget_settings_id'): Guard => ({
    key: keys.widget(orgId, widgetId),
    onFail: () => ValidationError.field(path, `widget settings ${widgetId} do not exist in this organization`),
  }),
  knowledgeBase: (orgId: string, kbId: string, path = 'knowledge_base'): Guard => ({
    key: keys.knowledgeBase(orgId, kbId),
    onFail: () => ValidationError.field(path, `knowledge base ${kbId} does not exist in this organization`),
  }),
};

import { NotFoundError } from '../../errors';
import { createWebCall, noSpeechModel, speechModelProblem, type WidgetCallStarted } from '../calls/web-calls';
import { spendChatStart } from './abuse-limits';
import type { StartWidgetChatInput } from './chat-schemas';
import { admit, visitorVariables, widgetAgent, type PublicCall } from './public-chats';

/** 404 `voice_disabled`: the widget takes chats but not calls (readable by an allowed page, as every answer after the origin check). */
class VoiceDisabledError extends NotFoundError {
  constructor(widgetId: string) {
    super('Widget', widgetId);
    this.message = `Widget ${widgetId} does not take calls: its voice_enabled is false`;
    this.details.reason = 'voice_disabled';
  }
}

/**
 * A web call started from the widget's call button (operations.md, "Web calls: voice in the
 * browser"): public, admitted as the widget's chats are (origin, CORS, deactivation: public-chats.ts
 * `admit`), and counted against the same allowance of new conversations per widget and per client
 * address (429). Only with `voice_enabled` (else 404 `voice_disabled`). The agent is chosen as for a
 * chat; the visitor's variables are the widget's `public_variables` only. Without a speech model the
 * call fails at once: 503 naming REALTIME_API_KEY (or REALTIME_BASE_URL). The page gets the call's id, the voice runtime's
 * `url` and the one-use token, never the organization's data.
 */
export async function startWidgetCall(call: PublicCall, input: StartWidgetChatInput): Promise<WidgetCallStarted> {
  const { widget, agents } = await admit(call, true);
  if (!widget.voice_enabled) throw new VoiceDisabledError(call.widgetId);
  const agentId = widgetAgent(call, agents, input.agent_id);
  const visitor = visitorVariables(widget, input.dynamic_variables);
  const problem = speechModelProblem();
  if (problem) throw noSpeechModel(problem);
  await spendChatStart(call.widgetId, call.sourceIp ?? 'unknown');
  const started = await createWebCall(widget.organization_id!, { agent_id: agentId, ...(visitor ? { dynamic_variables: visitor } : {}) }, { metadata: { widget_id: call.widgetId }, ...(input.visitor_id ? { visitorId: input.visitor_id } : {}) });
  return { call_id: started.call.id, agent_id: agentId, url: started.url, token: started.token, token_expires_at: started.token_expires_at };
}

import { keys } from '../../db/keys';
import { ConditionFailed, transact, updateExisting } from '../../db/store';
import { dispatchEvents, newEvent } from '../events/publish';
import { currentAgentOf, handoffAnalysis } from '../conversations/segments';
import { chatOf, eventData, loadChat, messageView, type ChatItem } from './store';

/*
 * The chat-analysis job's work, in a module of its own: only that job imports it. In
 * chats/service.ts, which every chat and widget function imports, its lazily imported analyzer,
 * analytics counters and settings were dead code there, yet esbuild still made each a chunk and
 * split the code those functions load at start by them (docs/operations.md, "Bundles and cold
 * starts").
 */

/** The chat-analysis job: analyses an ended chat once (as calls are analysed), then `chat.analyzed`. */
export async function analyzeChat(orgId: string, chatId: string): Promise<void> {
  const { analyzer, AnalysisError } = await import('../../adapters/analysis');
  const key = keys.chat(orgId, chatId);
  const item = await chatOf(orgId, chatId);
  if (!item || item.status !== 'ended') return;
  // The end in the analytics counters (once: conditioned on the chat as read), also when the analysis fails.
  const { syncConversationStats } = await import('../analytics/counters');
  await syncConversationStats('chat', orgId, chatId, item);
  if (item.analysis) return;
  const { messages } = await loadChat(orgId, chatId);
  const start = Date.parse(item.started_at);
  const transcript = messages
    .filter((m) => (m.role === 'agent' || m.role === 'user') && m.content)
    .map((m) => ({ role: m.role as 'agent' | 'user', text: m.content, time_sec: Math.max(0, Math.round((Date.parse(m.created_at) - start) / 100) / 10) }));
  let analysis;
  try {
    analysis = await analyzer().analyze({
      transcript,
      model: item.analysis_model,
      summaryPrompt: item.analysis_prompt,
      disconnectionReason: item.end_reason ?? 'user_ended',
      durationSec: Math.max(0, (Date.parse(item.ended_at ?? item.updated_at) - start) / 1000),
      // Typed outcomes: the analysis_fields and success_criteria of the agent that finished the chat (its last segment's; docs/api.md, "Typed outcomes", "Hand-offs").
      ...(await (await import('../analytics/settings')).typedOutcomeSettings(orgId, currentAgentOf(item).agent_id, currentAgentOf(item).agent_version)),
      ...handoffAnalysis(item),
    });
  } catch (err) {
    const reason = err instanceof AnalysisError ? err.reason : 'error';
    await transact([updateExisting(key, { analysis_error: reason, updated_at: new Date().toISOString() }, { condition: 'attribute_not_exists(analysis) OR analysis = :null', values: { ':null': null } })]).catch((e) => {
      if (!(e instanceof ConditionFailed)) throw e;
    });
    throw err;
  }
  const now = new Date().toISOString();
  const next: ChatItem = { ...item, analysis, analysis_error: null, updated_at: now };
  const event = newEvent(orgId, 'chat.analyzed', eventData(next, messages.map(messageView)));
  try {
    await transact([
      updateExisting(key, { analysis, analysis_error: null, updated_at: now }, { condition: 'attribute_not_exists(analysis) OR analysis = :null', values: { ':null': null } }),
      event.write,
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) return; // analysed by another delivery meanwhile
    throw err;
  }
  await dispatchEvents([event.event]);
  // The analysis in the analytics counters (a redelivery after a crash here counts it at its start).
  await syncConversationStats('chat', orgId, chatId);
}

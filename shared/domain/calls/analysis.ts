import { AnalysisError, analyzer } from '../../adapters/analysis';
import { keys } from '../../db/keys';
import { getItem, ignoreConditionFailed, transact, updateExisting } from '../../db/store';
import { dispatchEvents, newEvent } from '../events/publish';
import { syncConversationStats } from '../analytics/counters';
import { typedOutcomeSettings } from '../analytics/settings';
import { view, type CallItem } from './service';
import { currentAgentOf, handoffAnalysis } from '../conversations/segments';

/**
 * The call-analysis job: analyses an ended call once, with the agent's `post_call_analysis_model`
 * and `analysis_summary_prompt` as they were when the call was placed. Success writes `analysis`
 * (only while it is still null) and the `call.analyzed` event in one transaction. A failure keeps
 * `analysis` null, records why in `analysis_error` (the adapter's reason: `timeout`,
 * `rate_limited`, …) and throws, so the queue delivers the message again (and, after its
 * receives are spent, parks it in the dead-letter queue, whose alarm tells the operator).
 */
export async function analyzeCall(orgId: string, callId: string): Promise<void> {
  const key = keys.call(orgId, callId);
  const item = await getItem<CallItem>(key);
  if (!item || item.status !== 'ended') return;
  // The end in the analytics counters (once: conditioned on the call as read), also when the
  // analysis fails; when it succeeds, the end and the analysis are counted together at the end.
  if (item.analysis) {
    await syncConversationStats('call', orgId, callId, item);
    return;
  }
  let analysis;
  try {
    analysis = await analyzer().analyze({
      transcript: item.transcript ?? [],
      model: item.analysis_model,
      summaryPrompt: item.analysis_prompt,
      disconnectionReason: item.disconnection_reason ?? 'failed',
      durationSec: item.duration_sec ?? 0,
      // Typed outcomes: the agent's analysis_fields and success_criteria (docs/api.md, "Typed outcomes").
      // Handed off between agents: the last agent's fields, and the segments (docs/api.md, "Hand-offs").
      ...(await typedOutcomeSettings(orgId, currentAgentOf(item).agent_id, currentAgentOf(item).agent_version)),
      ...handoffAnalysis(item),
    });
  } catch (err) {
    await syncConversationStats('call', orgId, callId, item);
    const reason = err instanceof AnalysisError ? err.reason : 'error';
    await transact([updateExisting(key, { analysis_error: reason, updated_at: new Date().toISOString() }, { condition: 'attribute_not_exists(analysis) OR analysis = :null', values: { ':null': null } })])
      .catch(ignoreConditionFailed);
    throw err;
  }
  // Each warm transfer's leg and how it ended (calls/warm-transfer.ts), beside what the analyzer made of the transcript.
  if (item.transfers?.length) analysis = { ...analysis, custom: { ...analysis.custom, transfers: item.transfers.map((t) => ({ phone_number: t.phone_number, mode: t.mode, outcome: t.outcome })) } };
  const now = new Date().toISOString();
  const next: CallItem = { ...item, analysis, analysis_error: null, updated_at: now };
  const event = newEvent(orgId, 'call.analyzed', { ...(await view(next)) });
  try {
    await transact([
      updateExisting(key, { analysis, analysis_error: null, updated_at: now }, { condition: 'attribute_not_exists(analysis) OR analysis = :null', values: { ':null': null } }),
      event.write,
    ]);
  } catch (err) {
    ignoreConditionFailed(err); // analysed by another delivery meanwhile (which counts it)
    await syncConversationStats('call', orgId, callId);
    return;
  }
  await dispatchEvents([event.event]);
  // The end and the analysis in the analytics counters, from the item as just written (one
  // transaction; it reads the call again only when that changed meanwhile). A redelivery after a
  // crash here counts them at its start.
  await syncConversationStats('call', orgId, callId, { ...next, version: ((next as { version?: number }).version ?? 0) + 1 } as CallItem);
}

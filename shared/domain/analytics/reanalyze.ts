import { AnalysisError, analyzer, type AnalysisInput, type CallAnalysis } from '../../adapters/analysis';
import { clockNow } from '../../clock';
import { keys } from '../../db/keys';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { ConditionFailed, getItem, transact, updateExisting } from '../../db/store';
import { BadGatewayError, ConflictError, NotFoundError, UnavailableError } from '../../errors';
import { findAgent } from '../agents/service';
import { view, type CallItem } from '../calls/service';
import type { Call } from '../calls/schemas';
import type { Chat } from '../chats/schemas';
import { eventData, loadChat, messageView, summary, type ChatItem } from '../chats/store';
import { dispatchEvents, newEvent } from '../events/publish';
import { statsWrites, type Channel, type CountedItem } from './counters';
import { settingsOf, type AnalysisSettings } from './settings';

/**
 * POST /calls/{id}/analysis and POST /chats/{id}/analysis: the analysis of an ended conversation
 * run again, now, with its agent's current settings (model, summary prompt, `analysis_fields`,
 * `success_criteria`), answered with the conversation. The new analysis replaces the old one in
 * one transaction with `call.analyzed` / `chat.analyzed` and the analytics counters' move (the
 * old analysis' counts out, the new one's in), conditioned on the item's `version` as read: a
 * concurrent change (the first analysis landing meanwhile) makes it read and write again, so
 * nothing is counted twice; the answer already computed is written again (memoAnalyze), so a
 * conflict costs a read and a write, not another model request. A conversation not ended yet is a 409; another organization's a 404.
 */

/** The agent's current analysis settings; an agent deleted since: the settings the conversation took, no fields. */
async function currentSettings(orgId: string, item: { agent_id: string; analysis_model: string | null; analysis_prompt: string | null }): Promise<AnalysisSettings> {
  const agent = await findAgent(orgId, item.agent_id);
  return agent ? settingsOf(agent) : { model: item.analysis_model, summaryPrompt: item.analysis_prompt, fields: [], successCriteria: null };
}

/** An analyzer failure as the API tells it: 503 when trying again may cure it, else 502. */
function providerError(err: unknown): never {
  if (!(err instanceof AnalysisError)) throw err;
  const details = { reason: err.reason, provider: err.details.provider, provider_message: err.message };
  if (err.retryable) throw new UnavailableError(`The analysis failed (${err.reason}); retry later`, details, 5);
  throw new BadGatewayError(`The analysis provider refused the request (${err.reason})`, details);
}

async function analyze(input: AnalysisInput): Promise<CallAnalysis> {
  try {
    return await analyzer().analyze(input);
  } catch (err) {
    providerError(err);
  }
}

/**
 * The analysis of `input`, asking the model only when the input differs from the last one this
 * request analysed: a write that lost a race (the item's version moved: the first analysis
 * landing, another re-analysis) re-applies the answer it computed rather than paying the model
 * again, unless what the analysis reads (transcript, settings, end) changed meanwhile.
 */
function memoAnalyze() {
  let last: { input: string; analysis: CallAnalysis } | undefined;
  return async (input: AnalysisInput): Promise<CallAnalysis> => {
    const key = JSON.stringify(input);
    if (last?.input === key) return last.analysis;
    const analysis = await analyze(input);
    last = { input: key, analysis };
    return analysis;
  };
}

function notEnded(what: Channel, id: string, status: string): ConflictError {
  return new ConflictError(`The ${what} has not ended yet (${status}): it is analysed once it ends`, { id, status });
}

/** Writes the new analysis with its event and counter move; false when the item changed since it was read. */
async function store(channel: Channel, item: CountedItem, analysis: CallAnalysis, eventFor: (next: CountedItem & Record<string, unknown>) => Promise<Record<string, unknown>>) {
  const now = clockNow().toISOString();
  const next = { ...item, analysis, analysis_error: null, updated_at: now } as CountedItem & Record<string, unknown>;
  const stats = statsWrites(channel, next);
  const event = newEvent(item.organization_id, channel === 'call' ? 'call.analyzed' : 'chat.analyzed', await eventFor({ ...next, ...stats.set }));
  const key = channel === 'call' ? keys.call(item.organization_id, item.id) : keys.chat(item.organization_id, item.id);
  try {
    await transact([
      updateExisting(key, { analysis, analysis_error: null, updated_at: now, ...stats.set }, { condition: '#v = :read', values: { ':read': item.version ?? 0 } }),
      event.write,
      ...stats.counters,
    ]);
  } catch (err) {
    if (err instanceof ConditionFailed) return false;
    throw err;
  }
  await dispatchEvents([event.event]);
  return true;
}

export async function reanalyzeCall(orgId: string, callId: string): Promise<Call> {
  const analyze = memoAnalyze();
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await getItem<CallItem & CountedItem>(keys.call(orgId, callId));
    if (!item) throw new NotFoundError('Call', callId);
    if (item.status !== 'ended') throw notEnded('call', callId, item.status);
    const analysis = await analyze({
      transcript: item.transcript ?? [],
      ...(await currentSettings(orgId, item)),
      disconnectionReason: item.disconnection_reason ?? 'failed',
      durationSec: item.duration_sec ?? 0,
    });
    const written = await store('call', item, analysis, async (next) => ({ ...(await view(next as unknown as CallItem)) }));
    if (written) return view({ ...item, analysis, analysis_error: null } as CallItem);
    await pause(attempt);
  }
  throw new ConflictError('The call kept changing while analysing it again; retry', { id: callId });
}

export async function reanalyzeChat(orgId: string, chatId: string): Promise<Chat> {
  const analyze = memoAnalyze();
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const loaded = await loadChat(orgId, chatId);
    const item = loaded.item as ChatItem & CountedItem;
    const messages = loaded.messages;
    if (item.status !== 'ended') throw notEnded('chat', chatId, item.status);
    const start = Date.parse(item.started_at);
    const transcript = messages
      .filter((m) => (m.role === 'agent' || m.role === 'user') && m.content)
      .map((m) => ({ role: m.role as 'agent' | 'user', text: m.content, time_sec: Math.max(0, Math.round((Date.parse(m.created_at) - start) / 100) / 10) }));
    const analysis = await analyze({
      transcript,
      ...(await currentSettings(orgId, item)),
      disconnectionReason: item.end_reason ?? 'user_ended',
      durationSec: Math.max(0, (Date.parse(item.ended_at ?? item.updated_at) - start) / 1000),
    });
    const views = messages.map(messageView);
    const written = await store('chat', item, analysis, async (next) => eventData(next as unknown as ChatItem, views));
    if (written) return { ...summary({ ...item, analysis, analysis_error: null } as ChatItem), messages: views };
    await pause(attempt);
  }
  throw new ConflictError('The chat kept changing while analysing it again; retry', { id: chatId });
}

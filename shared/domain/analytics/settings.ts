import type { AnalysisField, AnalysisInput } from '../../adapters/analysis';
import { findAgent } from '../agents/service';
import { agentAtVersion } from '../agents/versions';
import type { Agent } from '../agents/schemas';

/** The analysis settings an agent gives: model, summary prompt, typed fields and success criteria. */
export type AnalysisSettings = Pick<AnalysisInput, 'model' | 'summaryPrompt' | 'fields' | 'successCriteria'>;

export function settingsOf(agent: Pick<Agent, 'post_call_analysis_model' | 'analysis_summary_prompt'> & Partial<Pick<Agent, 'analysis_fields' | 'success_criteria'>>): AnalysisSettings {
  return {
    model: agent.post_call_analysis_model || null,
    summaryPrompt: agent.analysis_summary_prompt || null,
    fields: (agent.analysis_fields ?? []) as AnalysisField[],
    successCriteria: agent.success_criteria?.trim() || null,
  };
}

/**
 * The typed fields and success criteria a conversation's analysis uses: those of the agent version
 * it recorded (`agent_version`), else of the agent as it is now. None when the agent is gone.
 */
export async function typedOutcomeSettings(orgId: string, agentId: string, agentVersion?: unknown): Promise<Pick<AnalysisInput, 'fields' | 'successCriteria'>> {
  const agent = typeof agentVersion === 'number' ? await agentAtVersion(orgId, agentId, agentVersion) : await findAgent(orgId, agentId);
  if (!agent) return { fields: [], successCriteria: null };
  const { fields, successCriteria } = settingsOf(agent);
  return { fields, successCriteria };
}

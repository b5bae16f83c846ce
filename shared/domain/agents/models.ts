import { config, defaultSpeechModel } from '../../config';

/**
 * An agent's model fields are `""` unless the agent names one: `""` means the platform's
 * configured model (LLM_MODEL, REALTIME_MODEL, ANALYSIS_MODEL), resolved here at the point of use,
 * so changing the setting changes every agent that names none (docs/api.md, "Agents").
 */

/** The conversation model a chat or a simulated call of this agent asks for. */
export function effectiveModel(agent: { model?: string | null }): string {
  return agent.model?.trim() || config().llm.defaultModel;
}

/** The speech-to-speech model a call of this agent connects to. */
export function effectiveSpeechModel(agent: { s2s_model?: string | null }): string {
  return agent.s2s_model?.trim() || defaultSpeechModel();
}

/** The model the analysis of this agent's conversations asks for. */
export function effectiveAnalysisModel(agent: { post_call_analysis_model?: string | null }): string {
  return agent.post_call_analysis_model?.trim() || config().analysis.defaultModel;
}

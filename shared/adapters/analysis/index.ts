import { checkAnalysis } from '../../access/enforce';
import { config } from '../../config';
import { localAnalyzer } from './local';
import { openAiAnalyzer } from './openai';
import type { AnalysisPort } from './port';

export type * from './port';
export { AnalysisError, SENTIMENTS } from './port';

let port: AnalysisPort | undefined;

/** This process's analyzer: ANALYSIS_PROVIDER `local` (default) or `openai` (shared/config.ts). */
export function analyzer(): AnalysisPort {
  checkAnalysis();
  return (port ??= config().analysis.provider === 'openai' ? openAiAnalyzer() : localAnalyzer());
}

/** Forget the analyzer (tests that change the environment). */
export function resetAnalyzer(): void {
  port = undefined;
}

import { checkAnalysis } from '../../access/enforce';
import { config } from '../../config';
import type { AnalysisPort } from './port';

export type * from './port';
export { AnalysisError, SENTIMENTS } from './port';

let port: AnalysisPort | undefined;

/**
 * The configured analyzer's code, imported by the first analysis: the local one carries a
 * sentiment lexicon (~50 KB) that every function which ends a chat or a call would otherwise
 * parse on each cold start, analysing or not.
 */
const load = async (name: AnalysisPort['name']): Promise<AnalysisPort> =>
  name === 'openai' ? (await import('./openai')).openAiAnalyzer() : (await import('./local')).localAnalyzer();

/** This process's analyzer: ANALYSIS_PROVIDER `local` (default) or `openai` (shared/config.ts). */
export function analyzer(): AnalysisPort {
  checkAnalysis();
  if (port) return port;
  const name = config().analysis.provider === 'openai' ? 'openai' : 'local';
  let loaded: Promise<AnalysisPort> | undefined;
  return (port = { name, analyze: async (input) => (await (loaded ??= load(name))).analyze(input) });
}

/** Forget the analyzer (tests that change the environment). */
export function resetAnalyzer(): void {
  port = undefined;
}

import type { Construct } from 'constructs';
import { ModelProvider, type ModelProviderProps } from './model-provider';

export type AnalysisProps = ModelProviderProps;

/** The post-call analysis settings (ANALYSIS_*) and, for `openai`, its API key's secret; functions declaring `access.analysis` get them. */
export class Analysis extends ModelProvider {
  constructor(scope: Construct, id: string, props: AnalysisProps = {}) {
    super(scope, id, props, {
      prefix: 'ANALYSIS',
      secretDescription: 'API key of the post-call analysis provider: JSON {"api_key": "..."}; set the value after the first deployment',
    });
  }
}

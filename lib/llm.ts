import type { Construct } from 'constructs';
import { ModelProvider, type ModelProviderProps } from './model-provider';

export type LlmProps = ModelProviderProps;

/** The conversation model's settings (LLM_*) and, for `openai`, its API key's secret; functions declaring `access.llm` get them. */
export class Llm extends ModelProvider {
  constructor(scope: Construct, id: string, props: LlmProps = {}) {
    super(scope, id, props, {
      prefix: 'LLM',
      secretDescription: 'API key of the conversation model provider: JSON {"api_key": "..."}; set the value after the first deployment',
    });
  }
}

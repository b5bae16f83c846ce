import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { LlmProviderName } from '../shared/adapters/llm/port';
import { operatorSecret } from './operator-secret';

export interface LlmProps {
  /** LLM_PROVIDER of every function that runs the conversation model; default `local`. */
  provider?: LlmProviderName;
  /** LLM_BASE_URL: an OpenAI-compatible API; default the adapter's (https://api.openai.com/v1). */
  baseUrl?: string;
  /** LLM_MODEL: the model used when an agent names none; default the adapter's (gpt-4o-mini). */
  defaultModel?: string;
  /** LLM_TIMEOUT_MS: how long one model request may take; default the adapter's (20,000). */
  timeoutMs?: number;
  /** Name of an existing Secrets Manager secret with the API key (`openai` only); default: one is created. */
  secretName?: string;
}

/** What a function that runs the model gets: its settings and, for `openai`, the key's secret. */
export interface LlmTarget {
  environment: Record<string, string>;
  secret?: secretsmanager.ISecret;
}

/**
 * The conversation model's settings: which model adapter the functions use and, for `openai`,
 * the Secrets Manager secret that holds the API key (JSON `{"api_key": "..."}`). The `local`
 * model needs no secret, so none is made for it. Only functions whose operation or job declares
 * `access.llm` get these settings and may read the secret (ApiFunction.bindLlm).
 */
export class Llm extends Construct {
  readonly provider: LlmProviderName;
  readonly secret?: secretsmanager.ISecret;
  readonly target: LlmTarget;

  constructor(scope: Construct, id: string, props: LlmProps = {}) {
    super(scope, id);
    this.provider = props.provider ?? 'local';
    if (this.provider === 'openai') this.secret = this.keySecret(props.secretName);
    const environment: Record<string, string> = { LLM_PROVIDER: this.provider };
    if (props.baseUrl) environment.LLM_BASE_URL = props.baseUrl;
    if (props.defaultModel) environment.LLM_MODEL = props.defaultModel;
    if (props.timeoutMs !== undefined) environment.LLM_TIMEOUT_MS = String(props.timeoutMs);
    this.target = { environment, secret: this.secret };
  }

  private keySecret(secretName: string | undefined): secretsmanager.ISecret {
    if (secretName) return secretsmanager.Secret.fromSecretNameV2(this, 'ApiKey', secretName);
    return operatorSecret(this, 'ApiKey', {
      description: 'API key of the conversation model provider: JSON {"api_key": "..."}; set the value after the first deployment',
      issuer: 'the model provider',
    });
  }
}

import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import { operatorSecret } from './operator-secret';

/** Settings of a model provider the functions call: the conversation model (LLM_*) or post-call analysis (ANALYSIS_*). */
export interface ModelProviderProps {
  /** `<PREFIX>_PROVIDER`; default `local`. */
  provider?: 'local' | 'openai';
  /** `<PREFIX>_BASE_URL`: an OpenAI-compatible API; default the adapter's (https://api.openai.com/v1). */
  baseUrl?: string;
  /** `<PREFIX>_MODEL`: the model used when an agent names none; default the adapter's (gpt-4o-mini). */
  defaultModel?: string;
  /** `<PREFIX>_TIMEOUT_MS`: how long one request may take; default the adapter's. */
  timeoutMs?: number;
  /** Name of an existing Secrets Manager secret with the API key (`openai` only); default: one is created. */
  secretName?: string;
}

/** What a function that calls the provider gets: its settings and, for `openai`, the key's secret and the variable naming it. */
export interface ModelProviderTarget {
  environment: Record<string, string>;
  secret?: secretsmanager.ISecret;
  /** `<PREFIX>_SECRET_ARN`. */
  secretVariable: string;
}

/**
 * A model provider's settings: which adapter the functions use and, for `openai`, the Secrets
 * Manager secret that holds the API key (JSON `{"api_key": "..."}`). The `local` adapters need no
 * secret, so none is made for them. Only functions whose operation or job declares the matching
 * access (`llm`, `analysis`) get these settings and may read the secret (ApiFunction.bindModelProvider).
 */
export class ModelProvider extends Construct {
  readonly provider: 'local' | 'openai';
  readonly secret?: secretsmanager.ISecret;
  readonly target: ModelProviderTarget;

  constructor(scope: Construct, id: string, props: ModelProviderProps, spec: { prefix: 'LLM' | 'ANALYSIS'; secretDescription: string }) {
    super(scope, id);
    this.provider = props.provider ?? 'local';
    if (this.provider === 'openai') {
      this.secret = props.secretName
        ? secretsmanager.Secret.fromSecretNameV2(this, 'ApiKey', props.secretName)
        : operatorSecret(this, 'ApiKey', { description: spec.secretDescription, issuer: 'the model provider' });
    }
    const environment: Record<string, string> = { [`${spec.prefix}_PROVIDER`]: this.provider };
    if (props.baseUrl) environment[`${spec.prefix}_BASE_URL`] = props.baseUrl;
    if (props.defaultModel) environment[`${spec.prefix}_MODEL`] = props.defaultModel;
    if (props.timeoutMs !== undefined) environment[`${spec.prefix}_TIMEOUT_MS`] = String(props.timeoutMs);
    this.target = { environment, secret: this.secret, secretVariable: `${spec.prefix}_SECRET_ARN` };
  }
}

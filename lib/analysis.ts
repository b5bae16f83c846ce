import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { AnalysisProviderName } from '../shared/adapters/analysis/port';
import { operatorSecret } from './operator-secret';

export interface AnalysisProps {
  /** ANALYSIS_PROVIDER of every function that analyses calls; default `local`. */
  provider?: AnalysisProviderName;
  /** ANALYSIS_BASE_URL: an OpenAI-compatible API; default the adapter's (https://api.openai.com/v1). */
  baseUrl?: string;
  /** ANALYSIS_MODEL: the model used when an agent names none; default the adapter's. */
  defaultModel?: string;
  /** Name of an existing Secrets Manager secret with the API key (`openai` only); default: one is created. */
  secretName?: string;
}

/** What a function that analyses calls gets: its settings and, for `openai`, the key's secret. */
export interface AnalysisTarget {
  environment: Record<string, string>;
  secret?: secretsmanager.ISecret;
}

/**
 * The post-call analysis settings: which analyzer the functions use and, for `openai`, the
 * Secrets Manager secret that holds the API key (JSON `{"api_key": "..."}`). The `local` analyzer
 * needs no secret, so none is made for it. Only functions whose operation or job declares
 * `access.analysis` get these settings and may read the secret (ApiFunction.bindAnalysis).
 */
export class Analysis extends Construct {
  readonly provider: AnalysisProviderName;
  readonly secret?: secretsmanager.ISecret;
  readonly target: AnalysisTarget;

  constructor(scope: Construct, id: string, props: AnalysisProps = {}) {
    super(scope, id);
    this.provider = props.provider ?? 'local';
    if (this.provider === 'openai') this.secret = this.keySecret(props.secretName);
    const environment: Record<string, string> = { ANALYSIS_PROVIDER: this.provider };
    if (props.baseUrl) environment.ANALYSIS_BASE_URL = props.baseUrl;
    if (props.defaultModel) environment.ANALYSIS_MODEL = props.defaultModel;
    this.target = { environment, secret: this.secret };
  }

  private keySecret(secretName: string | undefined): secretsmanager.ISecret {
    if (secretName) return secretsmanager.Secret.fromSecretNameV2(this, 'ApiKey', secretName);
    return operatorSecret(this, 'ApiKey', {
      description: 'API key of the post-call analysis provider: JSON {"api_key": "..."}; set the value after the first deployment',
      issuer: 'the model provider',
    });
  }
}

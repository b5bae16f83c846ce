import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { TelephonyProviderName } from '../shared/adapters/telephony/port';
import { operatorSecret } from './operator-secret';

export interface TelephonyProps {
  /** TELEPHONY_PROVIDER of every function that talks to the carrier; default `simulated`. */
  provider?: TelephonyProviderName;
  /** Name of an existing Secrets Manager secret with the Twilio credentials; default: one is created. */
  twilioSecretName?: string;
}

/**
 * The carrier settings: which adapter the functions use and the Secrets Manager secret that
 * holds the Twilio credentials (JSON `{"account_sid": "...", "auth_token": "..."}`). Only
 * functions whose operation declares `access.telephony` may read it (ApiFunction.bindTelephony).
 */
export class Telephony extends Construct {
  readonly provider: TelephonyProviderName;
  readonly secret: secretsmanager.ISecret;

  constructor(scope: Construct, id: string, props: TelephonyProps = {}) {
    super(scope, id);
    this.provider = props.provider ?? 'simulated';
    if (props.twilioSecretName) {
      this.secret = secretsmanager.Secret.fromSecretNameV2(this, 'TwilioCredentials', props.twilioSecretName);
      return;
    }
    this.secret = operatorSecret(this, 'TwilioCredentials', {
      description: 'Twilio credentials of the telephony adapter: JSON {"account_sid": "...", "auth_token": "..."}; set the value after the first deployment',
      issuer: 'Twilio',
    });
  }
}

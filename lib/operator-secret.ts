import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type { Construct } from 'constructs';

/**
 * A secret for credentials an outside provider issues (Twilio, a model API): its value put by the
 * operator after the first deployment, and retained when the stack is deleted so the operator's
 * credentials are never lost. Created with a random placeholder value; with `jsonKey`, as JSON
 * holding that key (`{"api_key": "<random>"}`), for a reader that needs the key to exist before
 * the operator puts the real one (ECS container secrets: a task whose secret lacks the key never starts).
 */
export function operatorSecret(scope: Construct, id: string, props: { description: string; issuer: string; jsonKey?: string }): secretsmanager.Secret {
  const secret = new secretsmanager.Secret(scope, id, {
    description: props.description,
    removalPolicy: RemovalPolicy.RETAIN,
    ...(props.jsonKey ? { generateSecretString: { secretStringTemplate: '{}', generateStringKey: props.jsonKey, passwordLength: 32, excludePunctuation: true } } : {}),
  });
  Validations.of(secret).acknowledge({
    id: 'AwsSolutions-SMG4',
    reason:
      `The value is issued by ${props.issuer}, not by AWS: a rotation Lambda cannot mint a new one, ` +
      `so it is rotated in ${props.issuer}'s console and the secret value updated by the operator.`,
  });
  return secret;
}

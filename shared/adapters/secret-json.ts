/**
 * The JSON object a Secrets Manager secret holds (provider credentials the operator puts there).
 * The client is loaded on first use, so functions that never read a secret do not pay for it at
 * cold start.
 */
export async function readSecretJson(arn: string): Promise<Record<string, unknown>> {
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const out = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: arn }));
  return JSON.parse(out.SecretString ?? '{}') as Record<string, unknown>;
}

/**
 * `getAgent` → `GetAgent`, `api-key-usage` → `ApiKeyUsage`, `API keys` → `APIKeys`. Construct ids
 * come from registry names, never from positions, so logical ids stay put as the registry grows.
 */
export function pascalCase(name: string): string {
  return name
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part[0].toUpperCase() + part.slice(1))
    .join('');
}

/** The stage when neither `-c stage=…` nor STAGE names one. */
export const DEFAULT_STAGE = 'dev';

/** Where one copy of the platform goes: its stage, its stack name, and the account and region if pinned. */
export interface Deployment {
  stage: string;
  /** `VoiceAgentPlatform-<stage>`: one stack per stage, so stages share an account and region without clashing. */
  stackName: string;
  /** Only what the user pinned; absent parts stay unresolved, so the template fits any account and region. */
  env?: { account?: string; region?: string };
}

/**
 * The deployment an app synthesizes, from CDK context first (`-c stage=prod -c account=… -c region=…`),
 * then the environment (STAGE, CDK_DEPLOY_ACCOUNT, CDK_DEPLOY_REGION). The CLI's own
 * CDK_DEFAULT_ACCOUNT and CDK_DEFAULT_REGION (from the profile) are deliberately not used: they
 * would bake one region into every template.
 */
export function deploymentOf(context: (key: string) => unknown, env: Record<string, string | undefined>): Deployment {
  const pick = (key: string, variable: string) => {
    const value = context(key) ?? env[variable];
    return value === undefined || value === '' ? undefined : String(value);
  };
  const stage = pick('stage', 'STAGE') ?? DEFAULT_STAGE;
  if (!/^[A-Za-z][A-Za-z0-9-]{0,29}$/.test(stage)) {
    throw new Error(`Stage "${stage}" must start with a letter and hold only letters, digits and hyphens (at most 30 characters).`);
  }
  const account = pick('account', 'CDK_DEPLOY_ACCOUNT');
  const region = pick('region', 'CDK_DEPLOY_REGION');
  return { stage, stackName: `VoiceAgentPlatform-${stage}`, ...(account || region ? { env: { account, region } } : {}) };
}

/**
 * Secrets Manager (JSON 1.1, `X-Amz-Target: secretsmanager.<Op>`) for the local AWS endpoint:
 * GetSecretValue, PutSecretValue and DescribeSecret on the secrets of a LocalSecretStore.
 *
 * It mirrors how Secrets Manager finds a secret: SecretId is its name, its full ARN, or a partial
 * ARN (without the six random characters); authorization is `secretsmanager:<Op>` on the full
 * ARN (on `…:secret:<name>` for an unknown one, so a refusal still comes first, as in AWS); an
 * unknown secret is ResourceNotFoundException. Only the current version (AWSCURRENT) is kept:
 * VersionId/VersionStage selection of older versions and binary secrets are refused.
 */
import { randomUUID } from 'node:crypto';
import { AwsServiceError, jsonRpcService, type AwsCall } from './protocol';

export interface LocalSecret {
  name: string;
  arn: string;
  value: string;
  versionId: string;
  createdDate: Date;
}

/** The secrets the local endpoint serves (the runner fills it from the template). */
export class LocalSecretStore {
  private readonly secrets = new Map<string, LocalSecret>();

  /** Adds (or replaces) a secret. */
  add({ name, arn, value }: { name: string; arn: string; value: string }): LocalSecret {
    const secret = { name, arn, value, versionId: randomUUID(), createdDate: new Date() };
    this.secrets.set(arn, secret);
    return secret;
  }

  /** Stores a new current value; throws when the secret is unknown. */
  put(nameOrArn: string, value: string): LocalSecret {
    const secret = this.find(nameOrArn);
    if (!secret) throw new Error(`Unknown secret "${nameOrArn}"`);
    Object.assign(secret, { value, versionId: randomUUID(), createdDate: new Date() });
    return secret;
  }

  /** The current value, or undefined for an unknown secret. */
  get(nameOrArn: string): string | undefined {
    return this.find(nameOrArn)?.value;
  }

  /** The secret a SecretId names: name, full ARN, or ARN without the random suffix. */
  find(nameOrArn: string): LocalSecret | undefined {
    for (const secret of this.secrets.values()) {
      if (secret.name === nameOrArn || secret.arn === nameOrArn) return secret;
      if (nameOrArn.startsWith('arn:') && secret.arn.replace(/-[A-Za-z0-9]{6}$/, '') === nameOrArn) return secret;
    }
    return undefined;
  }
}

interface SecretsOptions {
  region: string;
  accountId: string;
  secrets: LocalSecretStore;
}

const epochSeconds = (date: Date) => date.getTime() / 1000;

/** Serves Secrets Manager's JSON 1.1 protocol. */
export function secretsManagerService(options: SecretsOptions) {
  /** Finds and authorizes the secret; the ARN of an unknown one is the one IAM would evaluate. */
  const authorizedSecret = (call: AwsCall, operation: string, secretId: unknown): LocalSecret => {
    const id = String(secretId ?? '');
    const secret = options.secrets.find(id);
    const arn = secret?.arn ?? (id.startsWith('arn:') ? id : `arn:aws:secretsmanager:${options.region}:${options.accountId}:secret:${id}`);
    const denial = call.authorize(`secretsmanager:${operation}`, arn);
    if (denial) throw new AwsServiceError('AccessDeniedException', denial.message!);
    if (!secret) throw new AwsServiceError('ResourceNotFoundException', "Secrets Manager can't find the specified secret.");
    return secret;
  };

  const operations: Record<string, (call: AwsCall, input: Record<string, unknown>) => unknown> = {
    GetSecretValue(call, input) {
      if (input.VersionId !== undefined || (input.VersionStage !== undefined && input.VersionStage !== 'AWSCURRENT')) {
        throw new AwsServiceError('UnknownOperationException', 'The local AWS endpoint keeps only the AWSCURRENT version of a secret.');
      }
      const secret = authorizedSecret(call, 'GetSecretValue', input.SecretId);
      return { ARN: secret.arn, Name: secret.name, VersionId: secret.versionId, SecretString: secret.value, VersionStages: ['AWSCURRENT'], CreatedDate: epochSeconds(secret.createdDate) };
    },
    PutSecretValue(call, input) {
      const secret = authorizedSecret(call, 'PutSecretValue', input.SecretId);
      if (typeof input.SecretString !== 'string') throw new AwsServiceError('InvalidParameterException', 'You must provide either SecretString or SecretBinary (the local endpoint keeps SecretString only).');
      const stored = options.secrets.put(secret.arn, input.SecretString);
      return { ARN: stored.arn, Name: stored.name, VersionId: stored.versionId, VersionStages: ['AWSCURRENT'] };
    },
    DescribeSecret(call, input) {
      const secret = authorizedSecret(call, 'DescribeSecret', input.SecretId);
      return {
        ARN: secret.arn,
        Name: secret.name,
        LastChangedDate: epochSeconds(secret.createdDate),
        VersionIdsToStages: { [secret.versionId]: ['AWSCURRENT'] },
      };
    },
  };

  return jsonRpcService({ targetPrefix: 'secretsmanager', label: 'Secrets Manager', contentType: 'application/x-amz-json-1.1', operations });
}

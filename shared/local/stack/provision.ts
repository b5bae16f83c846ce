import { resetConfig } from '../../config';
import { resetDb } from '../../db/client';

/**
 * What an operator does after `cdk deploy` with `npm run admin`: an organization and its API key,
 * written straight to the stack's table (here DynamoDB Local, under the template's table name).
 * Runs in this process with the table's settings for the length of the call, then puts the
 * environment back.
 */
export async function provisionOrganizationKey(stack: { tableName: string; bucketName?: string; dynamoEndpoint: string }, input: { key: string; name: string }): Promise<{ organizationId: string; created: boolean }> {
  const settings: Record<string, string> = {
    TABLE_NAME: stack.tableName,
    DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
    BUCKET_NAME: stack.bucketName ?? 'unused',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    AWS_REGION: process.env.AWS_REGION ?? 'us-east-1',
  };
  const saved = Object.fromEntries(Object.keys(settings).map((k) => [k, process.env[k]]));
  Object.assign(process.env, settings);
  resetConfig();
  resetDb();
  try {
    const { ensureOrganizationKey } = await import('../../domain/api-keys/provision');
    return await ensureOrganizationKey(input);
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    resetConfig();
    resetDb();
  }
}

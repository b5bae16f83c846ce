/**
 * The admin command: organizations and their keys, against the local runtime's data or a
 * deployed table.
 *
 *   npm run admin -- create-org --name "Acme" [--rate-limit 600]
 *   npm run admin -- issue-key --org <organization id> --name "CI key"
 *   npm run admin -- list-orgs
 *   npm run admin -- set-ceiling --org <organization id> --ceiling 50   (or `--ceiling default`: CONCURRENCY_CEILING)
 *
 * Target: the local runtime's data by default (DATA_DIR, default .data; when `npm start` is
 * running it talks to that DynamoDB Local, otherwise it starts one on the same files for the
 * duration of the command), or a deployed table with `--table <name> [--region <region>]`
 * using the usual AWS credentials.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { resetConfig } from '../shared/config';
import { resetDb } from '../shared/db/client';

const usage = `usage: npm run admin -- <create-org --name NAME [--rate-limit N] | issue-key --org ID --name NAME | list-orgs | set-ceiling --org ID --ceiling N|default> [--table NAME --region REGION] [--data-dir DIR]`;

async function main(): Promise<number> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      org: { type: 'string' },
      'rate-limit': { type: 'string' },
      ceiling: { type: 'string' },
      table: { type: 'string' },
      region: { type: 'string' },
      'data-dir': { type: 'string' },
      json: { type: 'boolean' },
    },
  });
  const command = positionals[0];
  if (!command || !['create-org', 'issue-key', 'list-orgs', 'set-ceiling'].includes(command)) {
    console.error(usage);
    return 2;
  }

  let stop: (() => Promise<void>) | undefined;
  if (values.table) {
    process.env.TABLE_NAME = values.table;
    if (values.region) process.env.AWS_REGION = values.region;
  } else {
    const dataDir = resolve(values['data-dir'] ?? process.env.DATA_DIR ?? '.data');
    const runtimeFile = join(dataDir, 'runtime.json');
    const running = existsSync(runtimeFile) ? (JSON.parse(readFileSync(runtimeFile, 'utf8')) as { dynamoEndpoint: string; tableName: string; pid: number }) : undefined;
    const alive = running && isAlive(running.pid);
    if (alive) {
      process.env.DYNAMODB_ENDPOINT = running.dynamoEndpoint;
      process.env.TABLE_NAME = running.tableName;
    } else {
      const { startDynamoLocal } = await import('../shared/local/dynamo');
      const { ensureTable } = await import('../shared/local/table');
      const { LOCAL_TABLE_NAME } = await import('../shared/local/platform');
      const dynamo = await startDynamoLocal({ path: join(dataDir, 'dynamodb') });
      stop = () => dynamo.stop();
      await ensureTable(dynamo.endpoint, LOCAL_TABLE_NAME);
      process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
      process.env.TABLE_NAME = LOCAL_TABLE_NAME;
    }
    process.env.AWS_ACCESS_KEY_ID ??= 'local';
    process.env.AWS_SECRET_ACCESS_KEY ??= 'local';
  }
  process.env.BUCKET_NAME ??= 'unused-by-admin';
  process.env.LOG_LEVEL ??= 'WARN';
  resetConfig();
  resetDb();

  try {
    const { createOrganizationWithKey } = await import('../shared/domain/api-keys/provision');
    const { issueApiKey } = await import('../shared/domain/api-keys/service');
    const { listOrganizations } = await import('../shared/domain/organizations/service');
    if (command === 'create-org') {
      if (!values.name) throw new UsageError('create-org needs --name');
      const rate = values['rate-limit'] ? Number(values['rate-limit']) : undefined;
      if (rate !== undefined && (!Number.isInteger(rate) || rate < 1)) throw new UsageError('--rate-limit must be a positive integer (requests per minute)');
      const { organization, key } = await createOrganizationWithKey({ name: values.name, rateLimitPerMinute: rate });
      console.log(JSON.stringify({ organization_id: organization.id, name: organization.name, api_key: key }, null, 2));
      console.error('Keep the API key now: it is stored only as a hash and cannot be shown again.');
    } else if (command === 'issue-key') {
      if (!values.org || !values.name) throw new UsageError('issue-key needs --org and --name');
      const issued = await issueApiKey(values.org, { name: values.name });
      console.log(JSON.stringify({ organization_id: values.org, id: issued.id, name: issued.name, api_key: issued.key }, null, 2));
    } else if (command === 'set-ceiling') {
      if (!values.org || !values.ceiling) throw new UsageError('set-ceiling needs --org and --ceiling (a positive integer, or default)');
      const ceiling = values.ceiling === 'default' ? undefined : Number(values.ceiling);
      if (ceiling !== undefined && (!Number.isInteger(ceiling) || ceiling < 1)) throw new UsageError('--ceiling must be a positive integer (simultaneous live calls) or default');
      const { setConcurrencyCeiling } = await import('../shared/domain/concurrency/service');
      console.log(JSON.stringify({ organization_id: values.org, ...(await setConcurrencyCeiling(values.org, ceiling)) }, null, 2));
    } else {
      const orgs = await listOrganizations();
      if (values.json) console.log(JSON.stringify(orgs, null, 2));
      else if (!orgs.length) console.log('no organizations');
      else for (const o of orgs) console.log(`${o.id}  ${o.created_at}  ${o.name}${o.rate_limit_per_minute ? `  (${o.rate_limit_per_minute}/min)` : ''}`);
    }
    return 0;
  } finally {
    await stop?.();
  }
}

class UsageError extends Error {}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`admin: ${err.message}`);
    if (err instanceof UsageError) console.error(usage);
    process.exit(1);
  },
);

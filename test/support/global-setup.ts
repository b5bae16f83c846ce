import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDynamoLocal, type DynamoLocal } from '../../shared/local/dynamo';
import { startS3Local, type S3Local } from '../../shared/local/s3';
import { ensureTable } from '../../shared/local/table';

/** What global-teardown.ts needs to stop (jest runs both in the same parent process). */
export interface IntegrationServers {
  dynamo?: DynamoLocal;
  s3?: S3Local;
  dir: string;
}

export const INTEGRATION_SERVERS = Symbol.for('vap.integrationServers');
export const TEST_TABLE_NAME = 'vap-test';
export const TEST_BUCKET_NAME = 'vap-test';

/**
 * Starts one in-memory DynamoDB Local and one S3 emulator (in a temporary folder) for the
 * whole integration run, creates the tables and the buckets, and exports their endpoints in
 * process.env, which the jest workers inherit. Each worker has its own table and bucket
 * (`vap-test-<JEST_WORKER_ID>`, chosen in setup-env.js): the files of one worker share them one
 * after another, as every file did when jest ran in band, and a table-wide sweep in one file never
 * meets the items of a file running at the same time in another worker.
 */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  // Before the first SDK client: the SDK warns about Node 20 otherwise.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const dir = mkdtempSync(join(tmpdir(), 'vap-integration-'));
  const workers = Array.from({ length: Math.max(1, globalConfig.maxWorkers) }, (_, i) => i + 1);
  const servers: IntegrationServers = { dir };
  (globalThis as Record<symbol, unknown>)[INTEGRATION_SERVERS] = servers;
  const [dynamo, s3] = await Promise.allSettled([
    startDynamoLocal(),
    startS3Local({ directory: join(dir, 's3'), buckets: workers.map((w) => `${TEST_BUCKET_NAME}-${w}`) }),
  ]);
  if (dynamo.status === 'fulfilled') servers.dynamo = dynamo.value;
  if (s3.status === 'fulfilled') servers.s3 = s3.value;
  if (dynamo.status === 'rejected' || s3.status === 'rejected') {
    await servers.dynamo?.stop();
    await servers.s3?.stop();
    throw dynamo.status === 'rejected' ? dynamo.reason : (s3 as PromiseRejectedResult).reason;
  }
  for (const w of workers) await ensureTable(dynamo.value.endpoint, `${TEST_TABLE_NAME}-${w}`);
  Object.assign(process.env, {
    // setup-env.js names the worker's own (…-<JEST_WORKER_ID>); these are worker 1's.
    TABLE_NAME: `${TEST_TABLE_NAME}-1`,
    BUCKET_NAME: `${TEST_BUCKET_NAME}-1`,
    VAP_TEST_STORES_PER_WORKER: 'true',
    DYNAMODB_ENDPOINT: dynamo.value.endpoint,
    S3_ENDPOINT: s3.value.endpoint,
    RUNTIME: 'local',
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    SECRETS_LOCAL_KEY_FILE: join(dir, 'secrets-1.key'),
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  });
}

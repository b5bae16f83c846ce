/**
 * bench/concurrency-stubs: shared/local/dynamo.ts for a local runtime that shares its table (see
 * register.cjs). startDynamoLocal starts nothing: it answers the DynamoDB Local that
 * BENCH_SHARED_DYNAMODB_ENDPOINT names (started by bench/concurrency.ts's parent, which also stops
 * it), so every worker process's platform (shared/local/platform.ts, unchanged) reads and writes one
 * table, as Lambda functions in several execution environments do.
 */
import type { DynamoLocal } from '../../shared/local/dynamo';

export * from '../../shared/local/dynamo';

export async function startDynamoLocal(): Promise<DynamoLocal> {
  const endpoint = process.env.BENCH_SHARED_DYNAMODB_ENDPOINT;
  if (!endpoint) throw new Error('BENCH_SHARED_DYNAMODB_ENDPOINT is not set: the parent process starts DynamoDB Local and names it');
  return { endpoint, port: Number(new URL(endpoint).port), pid: undefined, stop: async () => undefined };
}

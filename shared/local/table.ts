import {
  CreateTableCommand,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  ResourceInUseException,
  ResourceNotFoundException,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { tableDefinition } from '../db/table-definition';
import { localCredentials } from './dynamo';

export interface EnsureTableResult {
  created: boolean;
  /** False when DynamoDB Local refused UpdateTimeToLive (items then never expire locally). */
  ttlEnabled: boolean;
}

/** A DynamoDB client for a local endpoint (dummy credentials). */
export function localDynamoClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: localCredentials });
}

/**
 * Creates the single table from `tableDefinition` unless it exists (idempotent, safe when
 * two processes race), waits until it is ACTIVE and turns on TTL.
 */
export async function ensureTable(endpoint: string, tableName: string, timeoutMs = 30_000): Promise<EnsureTableResult> {
  const client = localDynamoClient(endpoint);
  try {
    let created = false;
    if (!(await describe(client, tableName))) {
      try {
        await client.send(new CreateTableCommand(createTableInput(tableName)));
        created = true;
      } catch (err) {
        if (!(err instanceof ResourceInUseException)) throw err;
      }
    }
    await waitUntilActive(client, tableName, timeoutMs);
    return { created, ttlEnabled: await enableTtl(client, tableName) };
  } finally {
    client.destroy();
  }
}

/** The CreateTable input for the single table: every key attribute a string, on-demand billing. */
export function createTableInput(tableName: string) {
  const { partitionKey, sortKey, indexes } = tableDefinition;
  const keyNames = [partitionKey, sortKey, ...indexes.flatMap((i) => [i.partitionKey, i.sortKey])];
  return {
    TableName: tableName,
    BillingMode: 'PAY_PER_REQUEST' as const,
    AttributeDefinitions: keyNames.map((name) => ({ AttributeName: name, AttributeType: 'S' as const })),
    KeySchema: [
      { AttributeName: partitionKey, KeyType: 'HASH' as const },
      { AttributeName: sortKey, KeyType: 'RANGE' as const },
    ],
    GlobalSecondaryIndexes: indexes.map((index) => ({
      IndexName: index.name,
      KeySchema: [
        { AttributeName: index.partitionKey, KeyType: 'HASH' as const },
        { AttributeName: index.sortKey, KeyType: 'RANGE' as const },
      ],
      Projection: { ProjectionType: 'ALL' as const },
    })),
  };
}

async function describe(client: DynamoDBClient, tableName: string) {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  } catch (err) {
    if (err instanceof ResourceNotFoundException) return undefined;
    throw err;
  }
}

async function waitUntilActive(client: DynamoDBClient, tableName: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const table = await describe(client, tableName);
    const indexesActive = (table?.GlobalSecondaryIndexes ?? []).every((i) => i.IndexStatus === 'ACTIVE');
    if (table?.TableStatus === 'ACTIVE' && indexesActive) return;
    if (Date.now() > deadline) throw new Error(`Table ${tableName} did not become ACTIVE within ${timeoutMs} ms.`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function enableTtl(client: DynamoDBClient, tableName: string): Promise<boolean> {
  try {
    const current = await client.send(new DescribeTimeToLiveCommand({ TableName: tableName }));
    const status = current.TimeToLiveDescription?.TimeToLiveStatus;
    if (status === 'ENABLED' || status === 'ENABLING') return true;
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: tableDefinition.ttlAttribute, Enabled: true },
      }),
    );
    return true;
  } catch {
    // An emulator without TTL support: items simply do not expire locally.
    return false;
  }
}

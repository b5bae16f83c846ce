import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { checkDynamo, guardClient } from '../access/enforce';
import { config } from '../config';

let doc: DynamoDBDocumentClient | undefined;

/** The document client, built once per process (DynamoDB Local when DYNAMODB_ENDPOINT is set). */
export function db(): DynamoDBDocumentClient {
  if (doc) return doc;
  const { region, dynamoEndpoint } = config();
  const client = new DynamoDBClient({
    region,
    ...(dynamoEndpoint
      ? { endpoint: dynamoEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
  });
  // The local mirror of IAM: inside a function's access context, a call outside its grants fails.
  guardClient(client, 'accessGuard', (command, input) => checkDynamo(command, input, config().tableName));
  doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
    unmarshallOptions: { wrapNumbers: false },
  });
  return doc;
}

/** The table name from configuration. */
export function tableName(): string {
  return config().tableName;
}

/** Drop the cached client (tests that point at a fresh endpoint). */
export function resetDb(): void {
  doc = undefined;
}

/**
 * The cold-start floor of `npm run bench` (b): a handler that only creates a DynamoDB document
 * client, the least any data function of this API loads. Bundled like the functions, both with
 * the AWS SDK inside and with it left external; the cheaper of the two is the floor.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';

const db = DynamoDBDocumentClient.from(new DynamoDBClient({}));

export const handler = async () => ({ statusCode: 200, body: String(!!db) });

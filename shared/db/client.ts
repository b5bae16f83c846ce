import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { checkDynamo, guardClient } from '../access/enforce';
import { addFaultPoint, localRetryStrategy } from '../fault-point';
import { config } from '../config';
import { traceAwsClient } from '../telemetry/aws';
import { CONFLICT_ATTEMPTS, isTransactionConflict, pause, TransactionConflict } from './retry';

let doc: DynamoDBDocumentClient | undefined;

/** The DynamoDB client's default number of attempts in this SDK (its retries under throttling; test/integration/local/faults.test.ts checks it). */
export const DYNAMODB_MAX_ATTEMPTS = 4;

/** The document client, built once per process (DynamoDB Local when DYNAMODB_ENDPOINT is set). */
export function db(): DynamoDBDocumentClient {
  if (doc) return doc;
  const { region, dynamoEndpoint } = config();
  const client = new DynamoDBClient({
    region,
    ...(dynamoEndpoint
      ? { endpoint: dynamoEndpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' }, retryStrategy: localRetryStrategy(DYNAMODB_MAX_ATTEMPTS) }
      : {}),
  });
  // The local mirror of IAM: inside a function's access context, a call outside its grants fails.
  guardClient(client, 'accessGuard', (command, input) => checkDynamo(command, input, config().tableName));
  addFaultPoint(client, 'dynamodb');
  retryLoneWriteConflicts(client);
  traceAwsClient(client, 'DynamoDB');
  doc = DynamoDBDocumentClient.from(client, {
    // Numbers arrive as JSON doubles, already as precise as they will be: a double beyond 2^53
    // is stored as its shortest decimal form and read back as the same double, never a BigInt.
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false, allowImpreciseNumbers: true },
    unmarshallOptions: { wrapNumbers: (value: string) => Number(value) },
  });
  doc.middlewareStack.add((next) => (args) => next({ ...args, input: shieldOwnConstructors(args.input) as typeof args.input }), {
    step: 'initialize',
    name: 'shieldOwnConstructors',
  });
  return doc;
}

const LONE_WRITES = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

/**
 * A lone write that meets a transaction in flight on its item fails with
 * TransactionConflictException: retryable and not a failed condition (references.md), yet the
 * SDK's retry strategy does not retry it. Every lone write of the code base (the store's, and the
 * counters, markers and idempotency records that write raw) is sent again here, and answers
 * TransactionConflict (a 503) when the conflict lasts.
 */
function retryLoneWriteConflicts(client: DynamoDBClient): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (!LONE_WRITES.has(context.commandName ?? '')) return next(args);
      for (let attempt = 0; ; attempt++) {
        try {
          return await next(args);
        } catch (err) {
          if (!isTransactionConflict(err)) throw err;
          if (attempt + 1 >= CONFLICT_ATTEMPTS) throw new TransactionConflict({ cause: err });
          await pause(attempt);
        }
      }
    },
    { step: 'build', name: 'retryLoneWriteConflicts', override: true },
  );
}

/**
 * util-dynamodb chooses how to marshal an object from `value.constructor.name`, so a plain object
 * with its own `constructor` key (free-form data may have one) is refused or misread. Such objects
 * are handed to it as Maps, which it marshals entry by entry; the keys are stored as sent, and
 * read back as plain objects. Everything else is passed through untouched (same references).
 */
export function shieldOwnConstructors(value: unknown): unknown {
  if (Array.isArray(value)) {
    const items = value.map(shieldOwnConstructors);
    return items.some((item, i) => item !== value[i]) ? items : value;
  }
  if (value === null || typeof value !== 'object') return value;
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return value;
  const entries = Object.entries(value);
  const shielded = entries.map(([k, v]) => [k, shieldOwnConstructors(v)] as const);
  if (Object.hasOwn(value, 'constructor')) return new Map(shielded);
  return shielded.some(([, v], i) => v !== entries[i]![1]) ? Object.fromEntries(shielded) : value;
}

/** The table name from configuration. */
export function tableName(): string {
  return config().tableName;
}

/** Drop the cached client (tests that point at a fresh endpoint). */
export function resetDb(): void {
  doc = undefined;
}

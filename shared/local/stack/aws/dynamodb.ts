/**
 * DynamoDB (JSON 1.0, `X-Amz-Target: DynamoDB_20120810.<Op>`) for the local AWS endpoint.
 *
 * It mirrors IAM's view of each operation: the action is `dynamodb:<Op>` on the table's ARN (or
 * `<table arn>/index/<name>` for a Query or Scan of an index); batch operations are evaluated on
 * every table they touch, and TransactWriteItems/TransactGetItems item by item as the item's own
 * action (Put → PutItem, Update → UpdateItem, Delete → DeleteItem, ConditionCheck →
 * ConditionCheckItem, Get → GetItem), as IAM does. The condition key `dynamodb:LeadingKeys` holds
 * the partition-key values the request names (a Query's from its key condition); the key schema
 * comes from DescribeTable against DynamoDB Local, cached. An allowed request is forwarded
 * byte for byte to DynamoDB Local and its answer streamed back (so its CRC32 header stays true);
 * an unknown table is forwarded too, to be answered ResourceNotFoundException there.
 *
 * It refuses nothing of its own; `dynamodb:Attributes`, `dynamodb:Select` and the other
 * fine-grained keys are not computed (a condition on them sees a missing key).
 */
import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { RequestContext } from '../iam';
import { proxy, sendJsonError, type AwsCall } from './protocol';

interface DynamoOptions {
  region: string;
  accountId: string;
  dynamoEndpoint: string;
  tables: { name: string; arn: string }[];
}

type AttributeValue = Record<string, unknown>;
type Key = Record<string, AttributeValue>;
interface KeySchema {
  table: string;
  indexes: Record<string, string>;
}

/** One IAM check a request needs: an action on a resource, with its leading keys when known. */
interface Check {
  action: string;
  resource: string;
  leadingKeys?: string[];
}

/** Serves DynamoDB: authorize, then forward to DynamoDB Local. */
export function dynamoService(options: DynamoOptions) {
  const schemas = new Map<string, Promise<KeySchema | undefined>>();
  const local = new DynamoDBClient({ endpoint: options.dynamoEndpoint, region: options.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const arnOf = (table: string) =>
    table.startsWith('arn:') ? table : options.tables.find((t) => t.name === table)?.arn ?? `arn:aws:dynamodb:${options.region}:${options.accountId}:table/${table}`;

  const schemaOf = (table: string) => {
    let schema = schemas.get(table);
    if (!schema) {
      schema = describeKeys(local, table);
      schemas.set(table, schema);
      // An unknown table may be created later: do not remember its absence.
      void schema.then((found) => found ?? schemas.delete(table));
    }
    return schema;
  };

  /** The partition-key values of `keys` (items or keys) on the table or one of its indexes. */
  const leadingKeys = async (table: string, keys: Key[], index?: string) => {
    const schema = await schemaOf(table);
    const name = index ? schema?.indexes[index] : schema?.table;
    if (!name) return undefined;
    return keys.map((key) => scalar(key[name])).filter((v): v is string => v !== undefined);
  };

  const checksFor = async (operation: string, input: Record<string, unknown>): Promise<Check[]> => {
    const table = input.TableName as string | undefined;
    const check = async (action: string, tableName: string, keys: Key[] | undefined, index?: string): Promise<Check> => ({
      action: `dynamodb:${action}`,
      resource: index ? `${arnOf(tableName)}/index/${index}` : arnOf(tableName),
      leadingKeys: keys ? await leadingKeys(tableName, keys, index) : undefined,
    });
    switch (operation) {
      case 'GetItem':
      case 'DeleteItem':
      case 'UpdateItem':
        return [await check(operation, table!, [input.Key as Key])];
      case 'PutItem':
        return [await check(operation, table!, [input.Item as Key])];
      case 'Query': {
        const index = input.IndexName as string | undefined;
        const schema = await schemaOf(table!);
        const hashName = index ? schema?.indexes[index] : schema?.table;
        const value = hashName ? queryHashValue(input, hashName) : undefined;
        return [{ ...(await check(operation, table!, undefined, index)), leadingKeys: value === undefined ? undefined : [value] }];
      }
      case 'Scan':
        return [await check(operation, table!, undefined, input.IndexName as string | undefined)];
      case 'BatchGetItem':
      case 'BatchWriteItem':
        return Promise.all(
          Object.entries((input.RequestItems ?? {}) as Record<string, unknown>).map(([name, request]) => {
            const keys = operation === 'BatchGetItem'
              ? ((request as { Keys?: Key[] }).Keys ?? [])
              : (request as Array<{ PutRequest?: { Item: Key }; DeleteRequest?: { Key: Key } }>).map((r) => r.PutRequest?.Item ?? r.DeleteRequest?.Key ?? {});
            return check(operation, name, keys);
          }),
        );
      case 'TransactWriteItems':
      case 'TransactGetItems':
        return Promise.all(((input.TransactItems ?? []) as Array<Record<string, { TableName: string; Key?: Key; Item?: Key }>>).map((item) => {
          const [kind, detail] = Object.entries(item)[0]!;
          const action = { Put: 'PutItem', Update: 'UpdateItem', Delete: 'DeleteItem', ConditionCheck: 'ConditionCheckItem', Get: 'GetItem' }[kind] ?? kind;
          return check(action, detail.TableName, [detail.Key ?? detail.Item ?? {}]);
        }));
      case 'ListTables':
        return [{ action: 'dynamodb:ListTables', resource: '*' }];
      default:
        return [await check(operation, table ?? '*', undefined)];
    }
  };

  const serve = async (call: AwsCall): Promise<void> => {
    const target = String(call.req.headers['x-amz-target'] ?? '');
    const operation = target.startsWith('DynamoDB_20120810.') ? target.slice('DynamoDB_20120810.'.length) : '';
    const body = await call.body();
    if (!operation) {
      return sendJsonError(call, { status: 400, code: 'UnknownOperationException', message: `Unknown DynamoDB target "${target}"`, namespace: 'com.amazon.coral.service' });
    }
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(body.toString('utf8') || '{}');
    } catch {
      return sendJsonError(call, { status: 400, code: 'SerializationException', message: 'Start of structure or map found where not expected.', namespace: 'com.amazon.coral.service' });
    }
    for (const check of await checksFor(operation, input)) {
      const context: RequestContext = check.leadingKeys ? { 'dynamodb:LeadingKeys': check.leadingKeys } : {};
      const denial = call.authorize(check.action, check.resource, context);
      if (denial) {
        return sendJsonError(call, { status: 400, code: 'AccessDeniedException', namespace: 'com.amazon.coral.service', messageField: 'Message', message: denial.message! });
      }
    }
    const { authorization, 'x-amz-date': date, 'content-type': contentType } = call.req.headers;
    await proxy(call.res, {
      endpoint: options.dynamoEndpoint,
      method: 'POST',
      path: '/',
      // DynamoDB Local reads the access key (and with sharedDb ignores it); it checks no signature.
      headers: { 'content-type': contentType ?? 'application/x-amz-json-1.0', 'x-amz-target': target, ...(authorization ? { authorization } : {}), ...(date ? { 'x-amz-date': date } : {}) },
      body,
    });
  };
  return Object.assign(serve, { close: () => local.destroy() });
}

async function describeKeys(client: DynamoDBClient, table: string): Promise<KeySchema | undefined> {
  try {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: table }));
    const hash = (schema?: Array<{ AttributeName?: string; KeyType?: string }>) => schema?.find((k) => k.KeyType === 'HASH')?.AttributeName;
    const indexes: Record<string, string> = {};
    for (const index of [...(Table?.GlobalSecondaryIndexes ?? []), ...(Table?.LocalSecondaryIndexes ?? [])]) {
      const name = hash(index.KeySchema);
      if (index.IndexName && name) indexes[index.IndexName] = name;
    }
    const tableHash = hash(Table?.KeySchema);
    return tableHash ? { table: tableHash, indexes } : undefined;
  } catch {
    return undefined;
  }
}

/** A scalar attribute value as IAM compares it (S, N or B as its text). */
function scalar(value: AttributeValue | undefined): string | undefined {
  const v = value?.S ?? value?.N ?? value?.B;
  return typeof v === 'string' ? v : undefined;
}

/** The partition key's value in a Query: from KeyConditionExpression (`#pk = :v`) or the legacy KeyConditions. */
function queryHashValue(input: Record<string, unknown>, hashName: string): string | undefined {
  const legacy = (input.KeyConditions as Record<string, { AttributeValueList?: AttributeValue[] }> | undefined)?.[hashName];
  if (legacy) return scalar(legacy.AttributeValueList?.[0]);
  const expression = input.KeyConditionExpression as string | undefined;
  if (!expression) return undefined;
  const names = (input.ExpressionAttributeNames ?? {}) as Record<string, string>;
  const values = (input.ExpressionAttributeValues ?? {}) as Record<string, AttributeValue>;
  const operand = /^\s*\(*\s*([#:]?[\w.-]+)\s*\)*\s*$/;
  for (const clause of expression.split(/\s+AND\s+/i)) {
    const sides = clause.split(/(?<![<>])=/);
    if (sides.length !== 2) continue;
    const [left, right] = sides.map((side) => operand.exec(side)?.[1]);
    if (!left || !right) continue;
    const resolve = (token: string) => (token.startsWith('#') ? names[token] : token);
    if (resolve(left) === hashName && right.startsWith(':')) return scalar(values[right]);
    if (resolve(right) === hashName && left.startsWith(':')) return scalar(values[left]);
  }
  return undefined;
}

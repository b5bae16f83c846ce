import { inSpan, SpanKind, tracingActive } from './tracing';

interface StackClient {
  config?: { region?: unknown };
  middlewareStack: { add: (mw: any, options: { step: 'initialize'; name: string; override?: boolean }) => void };
}

/**
 * A client span for every command of an AWS SDK client (DynamoDB, S3, SQS, …), following the
 * RPC and AWS semantic conventions (`rpc.system` aws-api, `rpc.service`, `rpc.method`, the
 * table or bucket). A middleware on our own clients rather than the AWS SDK instrumentation:
 * that one patches `require`, which an esbuild bundle never calls. Off, it is one flag read.
 */
export function traceAwsClient(client: StackClient, service: 'DynamoDB' | 'S3' | 'SQS' | 'Scheduler' | 'SecretsManager' | 'KMS'): void {
  client.middlewareStack.add(
    (next: (args: any) => Promise<any>, ctx: { commandName?: string }) => async (args: { input?: Record<string, unknown> }) => {
      if (!tracingActive()) return next(args);
      const method = (ctx.commandName ?? 'Command').replace(/Command$/, '');
      const input = args.input ?? {};
      const attributes: Record<string, string | string[]> = { 'rpc.system': 'aws-api', 'rpc.service': service, 'rpc.method': method };
      if (service === 'DynamoDB') {
        attributes['db.system.name'] = 'aws.dynamodb';
        const tables = tableNames(input);
        if (tables.length) attributes['aws.dynamodb.table_names'] = tables;
      }
      if (service === 'S3' && typeof input.Bucket === 'string') attributes['aws.s3.bucket'] = input.Bucket;
      if (service === 'SQS' && typeof input.QueueUrl === 'string') {
        attributes['messaging.system'] = 'aws_sqs';
        attributes['messaging.destination.name'] = input.QueueUrl.split('/').pop() ?? '';
      }
      return inSpan(`${service}.${method}`, { kind: SpanKind.CLIENT, attributes }, () => next(args));
    },
    { step: 'initialize', name: 'openTelemetrySpan', override: true },
  );
}

function tableNames(input: Record<string, unknown>): string[] {
  if (typeof input.TableName === 'string') return [input.TableName];
  const names = new Set<string>();
  for (const key of ['RequestItems']) if (input[key] && typeof input[key] === 'object') for (const t of Object.keys(input[key] as object)) names.add(t);
  if (Array.isArray(input.TransactItems)) {
    for (const item of input.TransactItems as Record<string, { TableName?: string }>[]) for (const op of Object.values(item ?? {})) if (op?.TableName) names.add(op.TableName);
  }
  return [...names];
}

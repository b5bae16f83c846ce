import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CreateTableCommand, DynamoDBClient, UpdateTimeToLiveCommand, waitUntilTableExists } from '@aws-sdk/client-dynamodb';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import type { QueueJob, ScheduledJob } from '../../jobs/definition';
import { startDynamoLocal } from '../dynamo';
import { QueueRunner } from '../queue-runner';
import { startS3Local } from '../s3';
import { Scheduler } from '../scheduler';
import { createHttpServer, type HttpRoute } from '../http-server';
import type { HandlerLoader } from '../handler-loader';
import { attachRelay } from '../relay-server';
import type { WebSocketRoute } from '../../http/websocket';
import { relayConnections } from '../../adapters/relay-connections';
import { startLocalAws, LocalSecretStore, type LocalAws, type LocalSqsQueue } from './aws-endpoint';
import { unsupportedConditionOperators, type ResolvedStatement } from './iam';
import type { LocalWebSocketApi } from './aws-endpoint';
import { FunctionError, LambdaService, type FunctionSpec } from './functions';
import { restMethods, startRestApi, type LocalRestApi } from './rest-api';
import { bundleVoiceRuntime, readContainerSecrets, runTask, type RunningTask } from './ecs-task';
import { resolveAssembly, type ResolvedAssembly, type Resource } from './template';

/**
 * The synthesized stack run on this machine (docs/operations.md, "The synthesized stack, run
 * locally"): not the source with the local runtime's wiring, but the cloud assembly `cdk synth`
 * wrote, as CloudFormation and the services would run it.
 * - Functions: each AWS::Lambda::Function from its asset directory, `Handler`, `Environment`,
 *   `MemorySize`, `Timeout` and reserved concurrency (functions.ts), with credentials naming its role.
 * - Every AWS call of every function goes to one local endpoint (aws-endpoint.ts) that evaluates
 *   the caller's role policies from the template (iam.ts) and then serves DynamoDB (DynamoDB Local,
 *   the table created from the template's definition), S3 (s3rver), SQS, KMS, Secrets Manager and
 *   the WebSocket API's management API.
 * - The HTTP API's routes and `$default`, the REST API's methods (response streaming), the
 *   WebSocket API's routes, SQS event source mappings (batch size, partial batch responses only
 *   when `ReportBatchItemFailures` is set, the queue's visibility timeout and redrive after
 *   `maxReceiveCount`) and the Scheduler's `rate()` schedules, all read from the template.
 * - The ECS task definition's container, run from the image's bundle (ecs-task.ts).
 * URLs the template resolves to AWS hosts (execute-api, CloudFront, SQS) are rewritten to the local
 * servers'. What the template holds that does not run here is listed in `report` at start.
 */

export interface StackRunnerOptions {
  /** The cloud assembly directory (cdk.out). */
  assemblyDir: string;
  stackName?: string;
  region?: string;
  accountId?: string;
  /** Secret values the operator puts after deploying (`aws secretsmanager put-secret-value`), by secret name prefix or logical id. */
  secretValues?: Record<string, string>;
  /**
   * The network: outside services' addresses as the functions reach them (TWILIO_API_BASE: the
   * Twilio stand-in in place of api.twilio.com). Applied to every environment; never a template setting.
   */
  network?: Record<string, string>;
  /**
   * Outside services' URLs as the deploy settings name them, and the stand-ins that answer there
   * (`https://llm.example.com/v1` → the model stand-in): what DNS would do, applied to every
   * environment value of the template.
   */
  urls?: Record<string, string>;
  /** Length of one scheduled minute in seconds (TICK_SECONDS; default 5). */
  tickSeconds?: number;
  /** Run the ECS task (default true). */
  runTasks?: boolean;
  /** The functions' and task's log lines. Default: kept in `logs` only. */
  log?: (line: string) => void;
  /** Keep environments warm (default 5 minutes idle). */
  idleMs?: number;
}

export interface RunningStack {
  /** The HTTP API's base URL (http://127.0.0.1:port): paths start with /api/v1. */
  url: string;
  /** The REST (streaming) API's base URL, stage included. */
  streamingUrl?: string;
  /** The WebSocket API's URL (ConversationRelay). */
  relayUrl?: string;
  /** The voice runtime's stream URL. */
  voiceUrl?: string;
  aws: LocalAws;
  lambda: LambdaService;
  queues: QueueRunner;
  scheduler: Scheduler;
  secrets: LocalSecretStore;
  assembly: ResolvedAssembly;
  tableName: string;
  bucketName?: string;
  dynamoEndpoint: string;
  /** What the template asks for and how it runs here (`run`), or why it does not (`not run`). */
  report: string[];
  /** Every log line of the functions and the task. */
  logs: string[];
  /** Counts of what ran from the template. */
  counts: { functions: number; httpRoutes: number; restMethods: number; webSocketRoutes: number; queues: number; eventSourceMappings: number; schedules: number; tasks: number };
  stop(): Promise<void>;
}

const credentialsFor = (roleArn: string) => {
  const h = createHash('sha256').update(roleArn).digest('hex').toUpperCase();
  return { accessKeyId: `ASIA${h.slice(0, 16)}`, secretAccessKey: h.slice(16, 56), sessionToken: `local-session-${h.slice(0, 24)}` };
};

const freePort = async (): Promise<number> => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
};

/** `rate(5 minutes)` → 5; anything else is reported (cron and at() do not run here). */
function rateMinutes(expression: string): number | undefined {
  const m = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (!m) return undefined;
  return Number(m[1]) * (m[2]!.startsWith('minute') ? 1 : m[2]!.startsWith('hour') ? 60 : 1440);
}

/** Policy statements of every role, from the template's AWS::IAM::Policy resources and the roles' inline policies. */
function roleStatements(assembly: ResolvedAssembly, report: string[]): Map<string, { roleName: string; statements: ResolvedStatement[] }> {
  const byName = new Map<string, { roleName: string; arn: string; statements: ResolvedStatement[] }>();
  for (const role of assembly.ofType('AWS::IAM::Role')) {
    const statements: ResolvedStatement[] = [];
    for (const policy of (role.props.Policies ?? []) as Array<{ PolicyDocument: { Statement: ResolvedStatement[] } }>) statements.push(...policy.PolicyDocument.Statement);
    for (const managed of (role.props.ManagedPolicyArns ?? []) as string[]) {
      // The managed policies our roles may carry, as AWS defines them.
      if (/service-role\/AWSLambdaBasicExecutionRole$/.test(managed)) statements.push({ Effect: 'Allow', Action: ['logs:CreateLogGroup', 'logs:CreateLogStream', 'logs:PutLogEvents'], Resource: '*' });
      else if (/service-role\/AmazonECSTaskExecutionRolePolicy$/.test(managed)) statements.push({ Effect: 'Allow', Action: ['ecr:GetAuthorizationToken', 'ecr:BatchCheckLayerAvailability', 'ecr:GetDownloadUrlForLayer', 'ecr:BatchGetImage', 'logs:CreateLogStream', 'logs:PutLogEvents'], Resource: '*' });
      else report.push(`not run: managed policy ${managed} of role ${role.logicalId} (its statements are unknown here: calls it alone would allow are denied)`);
    }
    byName.set(role.ref, { roleName: role.ref, arn: role.attrs.Arn!, statements });
  }
  for (const policy of assembly.ofType('AWS::IAM::Policy')) {
    for (const roleName of (policy.props.Roles ?? []) as string[]) byName.get(roleName)?.statements.push(...(policy.props.PolicyDocument.Statement as ResolvedStatement[]));
  }
  return new Map([...byName.values()].map((r) => [r.arn, { roleName: r.roleName, statements: r.statements }]));
}

/** The secret's generated value, as Secrets Manager generates it (`GenerateSecretString`). */
function generatedSecret(props: Record<string, any>): string {
  if (typeof props.SecretString === 'string') return props.SecretString;
  const g = (props.GenerateSecretString ?? {}) as { PasswordLength?: number; SecretStringTemplate?: string; GenerateStringKey?: string; ExcludePunctuation?: boolean };
  const random = randomBytes(64).toString('base64').replace(/[^A-Za-z0-9]/g, '').slice(0, g.PasswordLength ?? 32);
  if (g.SecretStringTemplate && g.GenerateStringKey) return JSON.stringify({ ...JSON.parse(g.SecretStringTemplate), [g.GenerateStringKey]: random });
  return random;
}

async function createTables(assembly: ResolvedAssembly, endpoint: string): Promise<string[]> {
  const client = new DynamoDBClient({ endpoint, region: assembly.pseudo.region, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const names: string[] = [];
  try {
    for (const table of assembly.ofType('AWS::DynamoDB::Table')) {
      const p = table.props;
      await client.send(
        new CreateTableCommand({
          TableName: table.ref,
          AttributeDefinitions: p.AttributeDefinitions,
          KeySchema: p.KeySchema,
          BillingMode: p.BillingMode ?? 'PROVISIONED',
          ...(p.ProvisionedThroughput ? { ProvisionedThroughput: p.ProvisionedThroughput } : {}),
          ...(p.GlobalSecondaryIndexes ? { GlobalSecondaryIndexes: p.GlobalSecondaryIndexes } : {}),
          ...(p.LocalSecondaryIndexes ? { LocalSecondaryIndexes: p.LocalSecondaryIndexes } : {}),
        }),
      );
      await waitUntilTableExists({ client, maxWaitTime: 30 }, { TableName: table.ref });
      if (p.TimeToLiveSpecification?.Enabled) await client.send(new UpdateTimeToLiveCommand({ TableName: table.ref, TimeToLiveSpecification: p.TimeToLiveSpecification }));
      names.push(table.ref);
    }
  } finally {
    client.destroy();
  }
  return names;
}

/** The types the runner runs or stands in for; anything else in the template is reported as not run. */
const HANDLED = new Set([
  'AWS::Lambda::Function', 'AWS::IAM::Role', 'AWS::IAM::Policy', 'AWS::DynamoDB::Table', 'AWS::S3::Bucket', 'AWS::SQS::Queue', 'AWS::KMS::Key',
  'AWS::SecretsManager::Secret', 'AWS::ApiGatewayV2::Api', 'AWS::ApiGatewayV2::Route', 'AWS::ApiGatewayV2::Integration', 'AWS::ApiGatewayV2::Stage',
  'AWS::ApiGateway::RestApi', 'AWS::ApiGateway::Resource', 'AWS::ApiGateway::Method', 'AWS::ApiGateway::Stage', 'AWS::ApiGateway::Deployment',
  'AWS::Lambda::EventSourceMapping', 'AWS::Scheduler::Schedule', 'AWS::ECS::TaskDefinition', 'AWS::CloudFormation::Stack', 'AWS::Lambda::Permission',
  'AWS::Logs::LogGroup', 'AWS::CDK::Metadata',
]);

/** What stands in for the resources that do not run here, or why nothing does. */
const NOT_RUN_BECAUSE: Record<string, string> = {
  'AWS::ECS::Service': 'one task of its task definition runs; desired count, placement, health-check replacement and the deployment circuit breaker do not',
  'AWS::ECS::Cluster': 'the task runs as a local process',
  'AWS::ApplicationAutoScaling::ScalableTarget': 'no scaling: one task',
  'AWS::ApplicationAutoScaling::ScalingPolicy': 'no scaling: one task (its metric is checked by the infra tests)',
  'AWS::CloudFront::Distribution': 'its domain is rewritten to the task\'s local port: no edge, no TLS, no origin header',
  'AWS::CloudFront::VpcOrigin': 'the task is reached on its port directly',
  'AWS::ElasticLoadBalancingV2::LoadBalancer': 'the task is reached on its port directly',
  'AWS::ElasticLoadBalancingV2::Listener': 'the task is reached on its port directly',
  'AWS::ElasticLoadBalancingV2::ListenerRule': 'the task is reached on its port directly',
  'AWS::ElasticLoadBalancingV2::TargetGroup': 'the health check path is polled once at start',
  'AWS::CloudWatch::Alarm': 'no metrics are evaluated; the functions\' and task\'s logs are kept (RunningStack.logs)',
  'AWS::CloudWatch::Dashboard': 'no console here',
  'AWS::Logs::MetricFilter': 'no metrics are evaluated',
  'AWS::SNS::Topic': 'alarm notifications are not sent',
  'AWS::SNS::TopicPolicy': 'alarm notifications are not sent',
  'AWS::SQS::QueuePolicy': 'resource policies are not evaluated, only the callers\' identity policies (the stack\'s queue policies only deny non-TLS access)',
  'AWS::S3::BucketPolicy': 'resource policies are not evaluated, only the callers\' identity policies (the stack\'s bucket policies only deny non-TLS access)',
  'AWS::Lambda::EventInvokeConfig': 'nothing here invokes these functions asynchronously',
  'AWS::EC2::VPC': 'one host network',
  'AWS::EC2::Subnet': 'one host network',
  'AWS::EC2::RouteTable': 'one host network',
  'AWS::EC2::Route': 'one host network',
  'AWS::EC2::SubnetRouteTableAssociation': 'one host network',
  'AWS::EC2::InternetGateway': 'one host network',
  'AWS::EC2::VPCGatewayAttachment': 'one host network',
  'AWS::EC2::SecurityGroup': 'one host network: no port filtering',
  'AWS::EC2::SecurityGroupIngress': 'one host network: no port filtering',
  'AWS::EC2::SecurityGroupEgress': 'one host network: no port filtering',
  'AWS::EC2::FlowLog': 'one host network',
};

export async function runStack(options: StackRunnerOptions): Promise<RunningStack> {
  const region = options.region ?? 'us-east-1';
  const accountId = options.accountId ?? '000000000000';
  const logs: string[] = [];
  const log = (line: string) => {
    logs.push(line);
    options.log?.(line);
  };
  const undo: Array<() => Promise<void> | void> = [];
  const stop = async () => {
    for (const step of undo.reverse().splice(0)) {
      try {
        await step();
      } catch (err) {
        log(`stack runner: error while stopping: ${(err as Error).message}`);
      }
    }
  };
  try {
    const assembly = resolveAssembly(resolve(options.assemblyDir), { region, accountId, stackName: options.stackName });
    const report: string[] = assembly.missing.map((m) => `not run: ${m} (an attribute or intrinsic this runner cannot resolve)`);
    const notRun = new Map<string, number>();
    for (const r of assembly.resources) if (!HANDLED.has(r.type)) notRun.set(r.type, (notRun.get(r.type) ?? 0) + 1);
    for (const [type, n] of [...notRun].sort()) report.push(`not run: ${n} × ${type}${NOT_RUN_BECAUSE[type] ? ` (${NOT_RUN_BECAUSE[type]})` : ''}`);
    report.push('not run: API Gateway stage and route throttling (ThrottlingRateLimit/BurstLimit): requests are never throttled here; the per-key limit in the functions is');

    // Storage: DynamoDB Local with the template's tables; s3rver with its buckets.
    const dataDir = mkdtempSync(join(tmpdir(), 'vap-stack-'));
    undo.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const buckets = assembly.ofType('AWS::S3::Bucket').map((b) => b.ref);
    const [dynamo, s3] = await Promise.all([startDynamoLocal({}), startS3Local({ directory: join(dataDir, 's3'), buckets })]);
    undo.push(() => dynamo.stop(), () => s3.stop());
    const tables = await createTables(assembly, dynamo.endpoint);

    // Secrets, as CloudFormation creates them, then the operator's values.
    const secrets = new LocalSecretStore();
    for (const s of assembly.ofType('AWS::SecretsManager::Secret')) {
      const name = s.ref.split(':secret:')[1]!.replace(/-[A-Za-z]{6}$/, '');
      secrets.add({ name, arn: s.ref, value: generatedSecret(s.props) });
    }
    for (const [key, value] of Object.entries(options.secretValues ?? {})) {
      const match = assembly.ofType('AWS::SecretsManager::Secret').find((s) => s.logicalId.startsWith(key) || s.ref.includes(`:secret:${key}`));
      if (!match) throw new Error(`secretValues: no secret in the template matches "${key}"`);
      secrets.put(match.ref, value);
    }

    // Servers first (ports known), functions after (their environments name the servers' URLs).
    let lambda!: LambdaService;
    const loadHandler: HandlerLoader = async <H>(entry: string) => ((event: unknown) => lambda.invoke(entry, event)) as H;

    const httpApis = assembly.ofType('AWS::ApiGatewayV2::Api').filter((a) => a.props.ProtocolType === 'HTTP');
    const wsApis = assembly.ofType('AWS::ApiGatewayV2::Api').filter((a) => a.props.ProtocolType === 'WEBSOCKET');
    if (httpApis.length !== 1) throw new Error(`The stack runner serves one HTTP API; the template has ${httpApis.length}`);
    const httpApi = httpApis[0]!;
    const integrationFunction = (api: Resource, target: string): string => {
      const id = target.replace(/^integrations\//, '');
      const integration = assembly.ofType('AWS::ApiGatewayV2::Integration').find((i) => i.ref === id && i.props.ApiId === api.ref);
      if (!integration) throw new Error(`Route target ${target} of API ${api.logicalId} names no integration in the template`);
      if (integration.props.IntegrationType !== 'AWS_PROXY') throw new Error(`Integration ${integration.logicalId}: only AWS_PROXY (Lambda) integrations run locally`);
      return String(integration.props.IntegrationUri).replace(/^arn:aws:apigateway:[^:]+:lambda:path\/[^/]+\/functions\/(.+)\/invocations$/, '$1');
    };
    const routesOf = (api: Resource) => assembly.ofType('AWS::ApiGatewayV2::Route').filter((r) => r.props.ApiId === api.ref);
    const httpRoutes: HttpRoute[] = [];
    let fallbackArn: string | undefined;
    for (const route of routesOf(httpApi)) {
      const fn = integrationFunction(httpApi, String(route.props.Target));
      if (route.props.RouteKey === '$default') fallbackArn = fn;
      else {
        const [method, path] = String(route.props.RouteKey).split(' ');
        httpRoutes.push({ method: method!, path: path!, operationId: route.logicalId, entry: fn });
      }
    }
    const http = createHttpServer({ routes: httpRoutes, fallbackEntry: fallbackArn ?? 'no-default-route', loadHandler, log });
    const httpPort = await http.listen(0, '127.0.0.1');
    undo.push(() => http.close());
    const url = `http://127.0.0.1:${httpPort}`;

    const awsPort = await freePort();
    const awsEndpoint = `http://127.0.0.1:${awsPort}`;
    const rewrites: Array<[string, string]> = [
      ...Object.entries(options.urls ?? {}).map(([from, to]) => [from.replace(/\/$/, ''), to.replace(/\/$/, '')] as [string, string]),
      [String(httpApi.attrs.ApiEndpoint), url],
      [`https://sqs.${region}.amazonaws.com`, awsEndpoint],
    ];

    // The REST API (response streaming).
    let rest: LocalRestApi | undefined;
    let streamingUrl: string | undefined;
    const restApis = assembly.ofType('AWS::ApiGateway::RestApi');
    let restMethodCount = 0;
    for (const api of restApis) {
      const stage = assembly.ofType('AWS::ApiGateway::Stage').find((s) => s.props.RestApiId === api.ref);
      const methods = restMethods(assembly, api);
      restMethodCount += methods.length;
      rest = await startRestApi({ methods, stage: String(stage?.props.StageName ?? 'prod'), apiId: api.ref, accountId, lambda: { invoke: (n: string, e: unknown, s?: never) => lambda.invoke(n, e, s) } as LambdaService, log });
      undo.push(() => rest!.close());
      rewrites.push([`https://${api.ref}.execute-api.${region}.amazonaws.com`, `http://127.0.0.1:${rest.port}`]);
      streamingUrl = `http://127.0.0.1:${rest.port}/${stage?.props.StageName ?? 'prod'}`;
    }

    // The WebSocket API (ConversationRelay): its own server, the relay's local sockets behind the management API.
    let relayUrl: string | undefined;
    let wsRouteCount = 0;
    const webSocketApis: LocalWebSocketApi[] = [];
    for (const api of wsApis) {
      const stage = assembly.ofType('AWS::ApiGatewayV2::Stage').find((s) => s.props.ApiId === api.ref);
      const stageName = String(stage?.props.StageName ?? '$default');
      const wsRoutes = routesOf(api).map((r) => ({ routeKey: r.props.RouteKey, entry: integrationFunction(api, String(r.props.Target)), name: r.logicalId, timeoutSeconds: 29 }) as unknown as WebSocketRoute);
      wsRouteCount += wsRoutes.length;
      const server: Server = createServer((_req, res) => res.writeHead(426).end());
      const relay = attachRelay(server, { loadHandler, log, routes: wsRoutes });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      undo.push(async () => {
        await relay.close();
        await new Promise<void>((r) => server.close(() => r()));
      });
      const port = (server.address() as AddressInfo).port;
      relayUrl = `ws://127.0.0.1:${port}/relay`;
      rewrites.push([`wss://${api.ref}.execute-api.${region}.amazonaws.com/${stageName}`, relayUrl]);
      rewrites.push([`https://${api.ref}.execute-api.${region}.amazonaws.com/${stageName}`, `${awsEndpoint}/_ws/${api.ref}/${stageName}`]);
      const outcome = async (work: () => Promise<void>): Promise<'ok' | 'gone'> => {
        try {
          await work();
          return 'ok';
        } catch (err) {
          if ((err as Error).name === 'GoneException') return 'gone';
          throw err;
        }
      };
      webSocketApis.push({
        apiId: api.ref,
        stage: stageName,
        post: (connectionId: string, data: Buffer) => outcome(() => relayConnections().post(connectionId, data.toString('utf8'))),
        close: (connectionId: string) => outcome(() => relayConnections().close(connectionId)),
      });
    }

    // The voice runtime's public address (CloudFront in front of its load balancer) is the task's local port.
    const taskDefinitions = options.runTasks === false ? [] : assembly.ofType('AWS::ECS::TaskDefinition');
    const voicePort = taskDefinitions.length ? await freePort() : undefined;
    for (const d of assembly.ofType('AWS::CloudFront::Distribution')) {
      if (voicePort) rewrites.push([`wss://${d.attrs.DomainName}`, `ws://127.0.0.1:${voicePort}`], [`https://${d.attrs.DomainName}`, `http://127.0.0.1:${voicePort}`]);
    }
    const rewrite = (value: string) => rewrites.reduce((v, [from, to]) => v.split(from).join(to), value);
    const envOf = (variables: Record<string, unknown> | undefined) => Object.fromEntries(Object.entries(variables ?? {}).map(([k, v]) => [k, rewrite(String(v))]));
    // PUBLIC_BASE_URL (the operator's custom domain in front of the HTTP API) is this HTTP API.
    const publicBase = assembly.ofType('AWS::Lambda::Function').map((f) => f.props.Environment?.Variables?.PUBLIC_BASE_URL).find((v) => typeof v === 'string');
    if (publicBase) rewrites.push([String(publicBase).replace(/\/$/, ''), url]);

    // Functions.
    const roles = roleStatements(assembly, report);
    for (const [arn, role] of roles) {
      const unsupported = unsupportedConditionOperators(role.statements);
      if (unsupported.length) report.push(`not run: condition operator(s) ${unsupported.join(', ')} in the policies of ${arn} (calls they govern are refused)`);
    }
    const principals = new Map<string, { roleName: string; sessionName?: string; statements: ResolvedStatement[] }>();
    const specs: FunctionSpec[] = assembly.ofType('AWS::Lambda::Function').map((fn) => {
      const assetPath = fn.metadata['aws:asset:path'] as string | undefined;
      const codeDir = assetPath ? join(assembly.dir, assetPath) : '';
      if (!assetPath || !existsSync(codeDir)) throw new Error(`Function ${fn.logicalId} has no bundled asset in ${assembly.dir} (synthesize with bundling: cdk synth, not a test synth)`);
      const roleArn = String(fn.props.Role);
      const role = roles.get(roleArn);
      if (!role) throw new Error(`Function ${fn.logicalId}: role ${roleArn} is not in the template`);
      const credentials = credentialsFor(roleArn);
      principals.set(credentials.accessKeyId, { ...role, sessionName: fn.ref });
      const logGroup = assembly.resources.find((r) => r.type === 'AWS::Logs::LogGroup' && r.ref === fn.props.LoggingConfig?.LogGroup);
      return {
        name: fn.ref,
        logicalId: fn.logicalId,
        arn: fn.attrs.Arn!,
        codeDir,
        handler: String(fn.props.Handler),
        environment: envOf(fn.props.Environment?.Variables),
        memoryMb: Number(fn.props.MemorySize ?? 128),
        timeoutSeconds: Number(fn.props.Timeout ?? 3),
        reservedConcurrency: fn.props.ReservedConcurrentExecutions === undefined ? undefined : Number(fn.props.ReservedConcurrentExecutions),
        credentials,
        logGroupName: logGroup?.ref ?? `/aws/lambda/${fn.ref}`,
      };
    });
    lambda = new LambdaService(specs, {
      region,
      extraEnvironment: { AWS_ENDPOINT_URL: awsEndpoint, ...options.network },
      log: (line, fn) => log(`[${fn.logicalId}] ${line}`),
      idleMs: options.idleMs,
    });
    undo.push(() => lambda.stop());

    // Queues, their event source mappings and the schedules.
    const queueResources = assembly.ofType('AWS::SQS::Queue');
    const mappings = assembly.ofType('AWS::Lambda::EventSourceMapping');
    const jobs: QueueJob[] = [];
    for (const m of mappings) {
      const queue = assembly.byRef(String(m.props.EventSourceArn));
      const fn = lambda.spec(String(m.props.FunctionName));
      if (!queue || queue.type !== 'AWS::SQS::Queue' || !fn) {
        report.push(`not run: event source mapping ${m.logicalId} (${m.props.EventSourceArn} → ${m.props.FunctionName})`);
        continue;
      }
      const partial = ((m.props.FunctionResponseTypes ?? []) as string[]).includes('ReportBatchItemFailures');
      jobs.push({
        kind: 'queue',
        name: queue.attrs.QueueName!,
        entry: `${partial ? 'partial' : 'whole'}:${fn.name}`,
        description: m.logicalId,
        visibilityTimeoutSeconds: Number(queue.props.VisibilityTimeout ?? 30),
        maxReceiveCount: Number(queue.props.RedrivePolicy?.maxReceiveCount ?? 1_000_000),
        batchSize: Number(m.props.BatchSize ?? 10),
        maxConcurrency: m.props.ScalingConfig?.MaximumConcurrency,
        access: {},
        timeoutSeconds: fn.timeoutSeconds,
        memoryMb: fn.memoryMb,
      });
    }
    // Without ReportBatchItemFailures Lambda ignores a partial batch response: the whole batch succeeded.
    const queueLoader: HandlerLoader = async <H>(entry: string) => {
      const [mode, name] = [entry.slice(0, entry.indexOf(':')), entry.slice(entry.indexOf(':') + 1)];
      return (async (event: unknown) => {
        const result = (await lambda.invoke(name, event)) as { batchItemFailures?: unknown[] } | null;
        return mode === 'partial' ? result : undefined;
      }) as H;
    };
    const queues = new QueueRunner({ jobs, loadHandler: queueLoader, log });
    undo.push(() => queues.stop());
    const unconsumed = new Map<string, string[]>();
    const sqsQueues: LocalSqsQueue[] = queueResources.map((q) => ({
      name: q.attrs.QueueName!,
      arn: q.attrs.Arn!,
      url: rewrite(q.ref),
      async send(body: string, delaySeconds: number) {
        const md5 = createHash('md5').update(body).digest('hex');
        if (jobs.some((j) => j.name === q.attrs.QueueName)) {
          let parsed: unknown = body;
          try {
            parsed = JSON.parse(body);
          } catch {
            // A body that is not JSON is delivered as the string it was.
          }
          await queues.send(q.attrs.QueueName!, parsed, { delaySeconds });
        } else unconsumed.set(q.attrs.QueueName!, [...(unconsumed.get(q.attrs.QueueName!) ?? []), body]);
        return { messageId: createHash('sha256').update(`${Date.now()}${Math.random()}`).digest('hex').slice(0, 32), md5 };
      },
    }));

    const scheduled: ScheduledJob[] = [];
    for (const s of assembly.ofType('AWS::Scheduler::Schedule')) {
      const minutes = rateMinutes(String(s.props.ScheduleExpression));
      const fn = lambda.spec(String(s.props.Target?.Arn));
      if (!minutes || !fn || s.props.State === 'DISABLED') {
        report.push(`not run: schedule ${s.logicalId} (${s.props.ScheduleExpression} → ${s.props.Target?.Arn})`);
        continue;
      }
      scheduled.push({ kind: 'schedule', name: s.logicalId, entry: fn.name, description: String(s.props.Description ?? ''), rateMinutes: minutes, access: {}, timeoutSeconds: fn.timeoutSeconds });
    }
    const scheduler = new Scheduler({ jobs: scheduled, loadHandler, tickSeconds: options.tickSeconds, log });

    const aws = await startLocalAws({
      region,
      accountId,
      port: awsPort,
      principal: (keyId: string) => principals.get(keyId),
      dynamoEndpoint: dynamo.endpoint,
      s3Endpoint: s3.endpoint,
      tables: assembly.ofType('AWS::DynamoDB::Table').map((t) => ({ name: t.ref, arn: t.attrs.Arn! })),
      queues: sqsQueues,
      secrets,
      kmsKeys: assembly.ofType('AWS::KMS::Key').map((k) => ({ keyId: k.ref, arn: k.attrs.Arn! })),
      webSocketApis,
      onDenied: (d) => log(`AccessDenied: ${d.roleName} is not authorized to perform: ${d.action} on resource: ${d.resource}`),
      log,
    } as Parameters<typeof startLocalAws>[0]);
    undo.push(() => aws.close());

    // The ECS task: secrets read with the execution role, the application with the task role.
    let voiceUrl: string | undefined;
    for (const task of taskDefinitions) {
      const container = task.props.ContainerDefinitions[0] as { Name: string; Environment?: Array<{ Name: string; Value: string }>; Secrets?: Array<{ Name: string; ValueFrom: string }>; PortMappings?: Array<{ ContainerPort: number }> };
      const executionRole = roles.get(String(task.props.ExecutionRoleArn));
      const taskRole = roles.get(String(task.props.TaskRoleArn));
      if (!executionRole || !taskRole) throw new Error(`Task definition ${task.logicalId}: its roles are not in the template`);
      const execCreds = credentialsFor(String(task.props.ExecutionRoleArn));
      const taskCreds = credentialsFor(String(task.props.TaskRoleArn));
      principals.set(execCreds.accessKeyId, executionRole);
      principals.set(taskCreds.accessKeyId, taskRole);
      const client = new SecretsManagerClient({ endpoint: awsEndpoint, region, credentials: execCreds });
      const secretEnv = await readContainerSecrets(Object.fromEntries((container.Secrets ?? []).map((s) => [s.Name, s.ValueFrom])), client).finally(() => client.destroy());
      const bundle = await bundleVoiceRuntime(resolve(__dirname, '..', '..', '..'), join(dataDir, 'image'));
      const running: RunningTask = await runTask({
        bundle,
        container: { name: container.Name, environment: {}, secrets: {}, containerPort: container.PortMappings?.[0]?.ContainerPort ?? 8080, healthPath: '/health' },
        env: {
          ...Object.fromEntries((container.Environment ?? []).map((e) => [e.Name, rewrite(String(e.Value))])),
          ...secretEnv,
          AWS_REGION: region,
          AWS_DEFAULT_REGION: region,
          AWS_ACCESS_KEY_ID: taskCreds.accessKeyId,
          AWS_SECRET_ACCESS_KEY: taskCreds.secretAccessKey,
          AWS_SESSION_TOKEN: taskCreds.sessionToken,
          AWS_ENDPOINT_URL: awsEndpoint,
          ECS_CONTAINER_METADATA_URI_V4: 'http://127.0.0.1:1/v4/local',
          ...options.network,
        },
        port: voicePort!,
        log: (line) => log(`[${task.logicalId}] ${line}`),
      });
      undo.push(() => running.stop());
      voiceUrl = `ws://127.0.0.1:${voicePort}/stream`;
    }

    scheduler.start();
    undo.push(() => scheduler.stop());

    return {
      url,
      streamingUrl,
      relayUrl,
      voiceUrl,
      aws,
      lambda,
      queues,
      scheduler,
      secrets,
      assembly,
      tableName: tables[0]!,
      bucketName: assembly.ofType('AWS::S3::Bucket').map((b) => b.ref).find((b) => specs.some((s) => Object.values(s.environment).includes(b))),
      dynamoEndpoint: dynamo.endpoint,
      report,
      logs,
      counts: {
        functions: specs.length,
        httpRoutes: httpRoutes.length + (fallbackArn ? 1 : 0),
        restMethods: restMethodCount,
        webSocketRoutes: wsRouteCount,
        queues: queueResources.length,
        eventSourceMappings: jobs.length,
        schedules: scheduled.length,
        tasks: taskDefinitions.length,
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

export { FunctionError };

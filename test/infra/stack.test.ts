import { Match } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { tableDefinition } from '../../shared/db/table-definition';
import type { Operation } from '../../shared/http/operation';
import { operations, websocketRoutes } from '../../shared/http/registry';
import { QUEUE_RULES, queueUrlVariable, type JobDefinition, type QueueJob, type ScheduledJob } from '../../shared/jobs/definition';
import { jobs } from '../../shared/jobs/registry';
import { DEFAULT_THROTTLE } from '../../lib/api';
import { servedByStreamingApi } from '../../lib/streaming-api';
import { actionsOf, functionFor, jobFunction, synth, type FoundResource, type Synthesized } from './synth';

const DYNAMODB_WRITES = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];
const S3_WRITES = ['s3:PutObject', 's3:DeleteObject*', 's3:Abort*'];

function allActions(s: Synthesized, fn: FoundResource): string[] {
  return s.statementsOf(fn).flatMap(actionsOf);
}

/** Actions of statements without a condition (the RATE# counter grant is conditioned on its keys). */
function unconditionedActions(s: Synthesized, fn: FoundResource): string[] {
  return s.statementsOf(fn).filter((st: any) => !st.Condition).flatMap(actionsOf);
}

/** The unacknowledged cdk-nag AwsSolutions errors, one line each, so a failure names them. */
function nagErrors(s: Synthesized): string[] {
  const report = new AwsSolutionsChecks(s.app).validateScope(s.stack);
  return report.violations
    .filter((v) => v.severity === 'error')
    .map((v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`);
}

describe('the stack built from the registries', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth();
  });

  it('has one function per operation (and a streaming one per operation on the streaming API), one for the fallback and one per job', () => {
    expect(s.resources('AWS::Lambda::Function')).toHaveLength(operations.length + operations.filter(servedByStreamingApi).length + 1 + jobs.length + websocketRoutes.length);
  });

  it('serves each streaming operation (and every OpenAI-compatible one) on the REST API with a STREAM proxy integration to its streamHandler', () => {
    const streaming = operations.filter(servedByStreamingApi);
    expect(streaming.map((o) => o.operationId)).toEqual(expect.arrayContaining(['sendChatMessage', 'submitChatToolResults', 'openAiChatCompletions']));
    const methods = s.resources('AWS::ApiGateway::Method');
    expect(methods).toHaveLength(streaming.length);
    for (const method of methods) {
      expect(method.Properties.Integration).toMatchObject({ Type: 'AWS_PROXY', ResponseTransferMode: 'STREAM' });
    }
    const handlers = s.resources('AWS::Lambda::Function').filter((fn) => fn.Properties.Handler === 'index.streamHandler');
    expect(handlers).toHaveLength(streaming.length);
  });

  it.each(operations.map((op) => [`${op.method} ${op.path}`, op] as const))('routes %s to its own function', (_, operation) => {
    const route = s
      .resources('AWS::ApiGatewayV2::Route')
      .find((r) => r.Properties.RouteKey === `${operation.method} ${operation.path}`);
    expect(route).toBeDefined();
    const integrationRef = route!.Properties.Target['Fn::Join'][1][1];
    const integration = s.target(route!, integrationRef);
    expect(integration?.Properties.IntegrationType).toBe('AWS_PROXY');
    expect(s.target(integration!, integration!.Properties.IntegrationUri)).toEqual(functionFor(s, operation));
  });

  it('sends what no route matches, trailing-slash paths included, to the fallback function', () => {
    // API Gateway rejects route paths that end in "/": a `path/` it does not match to the
    // route itself lands on `$default`, so the fallback is where that tolerance lives.
    const keys = s.resources('AWS::ApiGatewayV2::Route').map((r) => r.Properties.RouteKey as string);
    expect(keys.filter((key) => key !== '$default' && key.endsWith('/'))).toEqual([]);
    const defaults = s.resources('AWS::ApiGatewayV2::Route').filter((r) => r.Properties.RouteKey === '$default' && s.target(r, r.Properties.ApiId)?.Properties.ProtocolType !== 'WEBSOCKET');
    expect(defaults).toHaveLength(1);
    const integration = s.target(defaults[0], defaults[0].Properties.Target['Fn::Join'][1][1]);
    const fn = s.target(integration!, integration!.Properties.IntegrationUri);
    expect(fn?.Properties.Description).toMatch(/^Answers requests no route matches/);
  });

  it('runs every function on nodejs22.x, arm64, traced, without source maps by default, and the shared settings', () => {
    for (const fn of s.resources('AWS::Lambda::Function')) {
      expect(fn.Properties).toMatchObject({
        Runtime: 'nodejs22.x',
        Architectures: ['arm64'],
        Handler: expect.stringMatching(/^index\.(handler|streamHandler)$/),
        TracingConfig: { Mode: 'Active' },
      });
      expect(Object.keys(fn.Properties.Environment.Variables)).toEqual(
        expect.arrayContaining(['TABLE_NAME', 'BUCKET_NAME', 'APP_VERSION', 'RATE_LIMIT_PER_MINUTE', 'API_KEY_CACHE_SECONDS']),
      );
      expect(fn.Properties.Environment.Variables).toMatchObject({
        RUNTIME: 'aws',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        POWERTOOLS_SERVICE_NAME: 'voice-agent-platform',
      });
      expect(fn.Properties.Environment.Variables.NODE_OPTIONS).toBeUndefined();
    }
  });

  it('turns source maps on for every function when asked (SOURCE_MAPS=true)', () => {
    const mapped = synth({ sourceMaps: true });
    const functions = mapped.resources('AWS::Lambda::Function');
    expect(functions.length).toBeGreaterThan(100);
    for (const fn of functions) expect(fn.Properties.Environment.Variables.NODE_OPTIONS).toBe('--enable-source-maps');
  });

  it('gives every function its own log group with a retention, and an error alarm', () => {
    const alarms = s.resources('AWS::CloudWatch::Alarm');
    for (const fn of s.resources('AWS::Lambda::Function')) {
      const logGroup = s.target(fn, fn.Properties.LoggingConfig?.LogGroup);
      expect(logGroup?.Properties.RetentionInDays).toBe(30);
      const alarm = alarms.find(
        (a) =>
          a.stack === fn.stack &&
          a.Properties.MetricName === 'Errors' &&
          a.Properties.Dimensions?.[0]?.Value?.Ref === fn.logicalId,
      );
      expect(alarm?.Properties.AlarmActions).toHaveLength(1);
    }
  });

  it('builds the table from its definition: on demand, PITR, TTL, both GSIs, retained', () => {
    s.parent.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        BillingMode: 'PAY_PER_REQUEST',
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: tableDefinition.ttlAttribute, Enabled: true },
        SSESpecification: { SSEEnabled: true },
        KeySchema: [
          { AttributeName: tableDefinition.partitionKey, KeyType: 'HASH' },
          { AttributeName: tableDefinition.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: tableDefinition.indexes.map((index) =>
          Match.objectLike({
            IndexName: index.name,
            KeySchema: [
              { AttributeName: index.partitionKey, KeyType: 'HASH' },
              { AttributeName: index.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          }),
        ),
      }),
    });
  });

  it('keeps the bucket private, encrypted, TLS-only, logged and free of stale uploads', () => {
    const bucket = s
      .resources('AWS::S3::Bucket')
      .find((b) => b.Properties.LoggingConfiguration !== undefined);
    expect(bucket).toBeDefined();
    expect(bucket!.Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: { ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: 'AES256' } }] },
    });
    expect(bucket!.Properties.LifecycleConfiguration.Rules).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ AbortIncompleteMultipartUpload: { DaysAfterInitiation: 1 }, Status: 'Enabled' }),
        expect.objectContaining({ Prefix: 'uploads/', ExpirationInDays: 2, Status: 'Enabled' }),
        // Call recordings, selected by the tag every recording is written with.
        expect.objectContaining({ TagFilters: [{ Key: 'kind', Value: 'call-recording' }], ExpirationInDays: 90, Status: 'Enabled' }),
      ]),
    );
    const policy = s.resources('AWS::S3::BucketPolicy').find((p) => s.target(p, p.Properties.Bucket) === bucket);
    expect(policy!.Properties.PolicyDocument.Statement).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
      ]),
    );
  });

  it('rotates the secrets key', () => {
    s.parent.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
  });

  describe.each(jobs.filter((job): job is QueueJob => job.kind === 'queue').map((job) => [job.name, job] as const))(
    'queue job %s',
    (_, job) => {
      it('has a TLS-only encrypted queue with a dead-letter queue, and an alarm on that queue', () => {
        const fn = jobFunction(s, job);
        const mapping = s.resources('AWS::Lambda::EventSourceMapping').find((m) => s.target(m, m.Properties.FunctionName) === fn);
        expect(mapping?.Properties).toMatchObject({ BatchSize: job.batchSize, FunctionResponseTypes: ['ReportBatchItemFailures'] });
        const queue = s.target(mapping!, mapping!.Properties.EventSourceArn)!;
        expect(queue.Properties).toMatchObject({
          VisibilityTimeout: job.visibilityTimeoutSeconds,
          SqsManagedSseEnabled: true,
          RedrivePolicy: { maxReceiveCount: job.maxReceiveCount },
        });
        const deadLetters = s.target(queue, queue.Properties.RedrivePolicy.deadLetterTargetArn)!;
        expect(deadLetters.Type).toBe('AWS::SQS::Queue');
        const alarm = s
          .resources('AWS::CloudWatch::Alarm')
          .find((a) => a.Properties.MetricName === 'ApproximateNumberOfMessagesVisible' && s.target(a, a.Properties.Dimensions[0].Value) === deadLetters);
        expect(alarm?.Properties).toMatchObject({ ComparisonOperator: 'GreaterThanThreshold', Threshold: 0 });
        expect(alarm?.Properties.AlarmActions).toHaveLength(1);
        for (const q of [queue, deadLetters]) {
          const policy = s.resources('AWS::SQS::QueuePolicy').find((p) => s.target(p, p.Properties.Queues[0]) === q);
          expect(policy?.Properties.PolicyDocument.Statement).toEqual(
            expect.arrayContaining([expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
          );
        }
      });

      it('keeps messages invisible 6× the function timeout, retries 5 times or more, and caps the consumer concurrency', () => {
        const fn = jobFunction(s, job);
        const mapping = s.resources('AWS::Lambda::EventSourceMapping').find((m) => s.target(m, m.Properties.FunctionName) === fn)!;
        const queue = s.target(mapping, mapping.Properties.EventSourceArn)!;
        expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * fn.Properties.Timeout);
        expect(queue.Properties.RedrivePolicy.maxReceiveCount).toBeGreaterThanOrEqual(5);
        const cap = mapping.Properties.ScalingConfig?.MaximumConcurrency;
        expect(cap).toBeGreaterThanOrEqual(2);
        expect(cap).toBeLessThanOrEqual(job.name === 'rag-ingest' ? 5 : QUEUE_RULES.defaultMaxConcurrency);
      });
    },
  );

  describe.each(jobs.filter((job): job is ScheduledJob => job.kind === 'schedule').map((job) => [job.name, job] as const))(
    'scheduled job %s',
    (_, job) => {
      it('has a schedule at its rate invoking its function, and the timeout it declares', () => {
        const fn = jobFunction(s, job);
        const schedules = s.resources('AWS::Scheduler::Schedule').filter((sc) => s.target(sc, sc.Properties.Target.Arn) === fn);
        expect(schedules).toHaveLength(1);
        const hours = job.rateMinutes % 60 === 0 ? job.rateMinutes / 60 : undefined;
        expect([`rate(${job.rateMinutes} minute${job.rateMinutes === 1 ? '' : 's'})`, hours && `rate(${hours} hour${hours === 1 ? '' : 's'})`]).toContain(schedules[0].Properties.ScheduleExpression);
        if (job.timeoutSeconds) expect(fn.Properties.Timeout).toBe(job.timeoutSeconds);
      });
    },
  );

  it('logs every request as JSON and throttles the default route', () => {
    const stage = s.resources('AWS::ApiGatewayV2::Stage').filter((st) => s.target(st, st.Properties.ApiId)?.Properties.ProtocolType !== 'WEBSOCKET')[0];
    expect(stage.Properties).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: { ThrottlingRateLimit: DEFAULT_THROTTLE.rateLimit, ThrottlingBurstLimit: DEFAULT_THROTTLE.burstLimit },
    });
    const format = JSON.parse(stage.Properties.AccessLogSettings.Format);
    expect(format).toMatchObject({
      requestId: '$context.requestId',
      route: '$context.routeKey',
      status: '$context.status',
      latency: '$context.responseLatency',
      ip: '$context.identity.sourceIp',
    });
    expect(s.target(stage, stage.Properties.AccessLogSettings.DestinationArn)?.Type).toBe('AWS::Logs::LogGroup');
  });

  it('alarms on API 5xx responses and outputs the API URL', () => {
    s.parent.hasResourceProperties('AWS::CloudWatch::Alarm', { Namespace: 'AWS/ApiGateway', MetricName: '5xx' });
    s.parent.hasOutput('ApiUrl', {});
  });

  it('grants no table writes to an operation with read access, and nothing to one without', () => {
    const readers = operations.filter((op) => op.access.table === 'R');
    expect(readers.length).toBeGreaterThan(0);
    for (const op of readers) {
      const actions = unconditionedActions(s, functionFor(s, op));
      expect(actions).toContain('dynamodb:Query');
      expect(actions.filter((a) => DYNAMODB_WRITES.includes(a))).toEqual([]);
    }
    for (const op of operations) {
      const actions = allActions(s, functionFor(s, op));
      if (!op.access.table) expect(actions.filter((a) => a.startsWith('dynamodb:'))).toEqual([]);
      if (!op.access.bucket) expect(actions.filter((a) => a.startsWith('s3:'))).toEqual([]);
      if (op.access.bucket !== 'RW') expect(actions.filter((a) => S3_WRITES.includes(a))).toEqual([]);
      if (!op.access.secrets) expect(actions.filter((a) => a.startsWith('kms:'))).toEqual([]);
      if (!op.access.queues?.length) expect(actions.filter((a) => a.startsWith('sqs:'))).toEqual([]);
    }
  });

  it('narrows bucket grants to the key patterns an operation declares', () => {
    const narrowed = operations.filter((op) => op.access.bucketPrefixes?.length);
    expect(narrowed.length).toBeGreaterThan(0);
    for (const op of narrowed) {
      const objectResources = s
        .statementsOf(functionFor(s, op))
        .filter((st: any) => [st.Action].flat().some((a: string) => a.startsWith('s3:GetObject')))
        .flatMap((st: any) => [st.Resource].flat())
        .map((r: unknown) => JSON.stringify(r));
      expect(objectResources.length).toBeGreaterThan(0);
      for (const r of objectResources) {
        if (!r.includes('/')) continue; // the bucket ARN itself (listing), not objects
        expect(op.access.bucketPrefixes!.some((pattern) => r.includes(`/${pattern}`))).toBe(true);
      }
    }
  });

  it('allows "*" as a resource only for the X-Ray actions', () => {
    for (const fn of s.resources('AWS::Lambda::Function')) {
      for (const statement of s.statementsOf(fn).filter((st) => st.Resource === '*')) {
        expect(actionsOf(statement).every((a) => a.startsWith('xray:'))).toBe(true);
      }
    }
  });

  it('passes the cdk-nag AwsSolutions checks (every exception acknowledged with a reason)', () => {
    expect(nagErrors(s)).toEqual([]);
  });
});

describe('the stack built from a registry that uses every kind of access', () => {
  const base = { summary: 'Test', entry: 'functions/test/none.ts', auth: true } as const;
  const createThing: Operation = {
    ...base,
    method: 'POST',
    path: '/api/v1/things',
    operationId: 'createThing',
    tag: 'Things',
    access: { table: 'RW', bucket: 'RW', secrets: true, queues: ['work'] },
    memoryMb: 512,
    timeoutSeconds: 20,
  };
  const getThing: Operation = {
    ...base,
    method: 'GET',
    path: '/api/v1/things/{thing_id}',
    operationId: 'getThing',
    tag: 'Things',
    access: { table: 'R', bucket: 'R' },
  };
  const work: JobDefinition = {
    kind: 'queue',
    name: 'work',
    entry: 'functions/test/work.ts',
    description: 'Does work',
    visibilityTimeoutSeconds: 60,
    maxReceiveCount: 5,
    batchSize: 20,
    access: { table: 'RW' },
  };
  const tick: JobDefinition = {
    kind: 'schedule',
    name: 'tick',
    entry: 'functions/test/tick.ts',
    description: 'Ticks',
    rateMinutes: 1,
    access: { table: 'R', queues: ['work'] },
  };
  let s: Synthesized;
  beforeAll(() => {
    s = synth({ operations: [createThing, getThing], jobs: [work, tick], throttle: { rateLimit: 7, burstLimit: 9 } });
  });

  it('turns queues, secrets and bucket writes into grants and settings', () => {
    const fn = functionFor(s, createThing);
    expect(fn.Properties).toMatchObject({ MemorySize: 512, Timeout: 20 });
    const variables = fn.Properties.Environment.Variables;
    expect(variables[queueUrlVariable('work')]).toEqual({ Ref: expect.stringMatching(/^referenceto.*WorkQueue.*Ref$/) });
    expect(variables.SECRETS_KEY_ID).toEqual({ Ref: expect.stringMatching(/SecretsKey.*Arn$/) });
    const actions = allActions(s, fn);
    expect(actions).toEqual(expect.arrayContaining(['sqs:SendMessage', 'kms:Decrypt', 'kms:GenerateDataKey', 'dynamodb:PutItem', 's3:PutObject']));
  });

  it('grants reading only to a read-only operation', () => {
    const actions = unconditionedActions(s, functionFor(s, getThing));
    expect(actions).toEqual(expect.arrayContaining(['dynamodb:GetItem', 's3:GetObject']));
    expect(actions.filter((a) => [...DYNAMODB_WRITES, ...S3_WRITES].includes(a) || a.startsWith('sqs:') || a.startsWith('kms:'))).toEqual([]);
  });

  it('schedules a scheduled job at its rate, with a role that may only invoke it', () => {
    const fn = jobFunction(s, tick);
    const schedule = s.resources('AWS::Scheduler::Schedule')[0];
    expect(schedule.Properties.ScheduleExpression).toBe('rate(1 minute)');
    expect(s.target(schedule, schedule.Properties.Target.Arn)).toEqual(fn);
    const role = s.target(schedule, schedule.Properties.Target.RoleArn)!;
    const statements = s
      .resources('AWS::IAM::Policy')
      .filter((p) => p.stack === 'parent' && (p.Properties.Roles as unknown[]).some((ref) => s.target(p, ref) === role))
      .flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(statements.flatMap(actionsOf)).toEqual(['lambda:InvokeFunction']);
    expect(allActions(s, fn)).toContain('sqs:SendMessage');
  });

  it('batches a queue job above 10 messages with a batching window', () => {
    s.parent.hasResourceProperties('AWS::Lambda::EventSourceMapping', { BatchSize: 20, MaximumBatchingWindowInSeconds: 1 });
  });

  it('applies the throttle it is given', () => {
    s.parent.hasResourceProperties('AWS::ApiGatewayV2::Stage', {
      DefaultRouteSettings: { ThrottlingRateLimit: 7, ThrottlingBurstLimit: 9 },
    });
  });

  it('passes the cdk-nag AwsSolutions checks', () => {
    expect(nagErrors(s)).toEqual([]);
  });

  it('refuses a registry that names an unknown queue, a duplicate route or a too-short visibility timeout', () => {
    expect(() => synth({ operations: [{ ...getThing, access: { queues: ['nope'] } }], jobs: [] })).toThrow(
      /getThing sends to queue "nope", but no queue job has that name/,
    );
    expect(() => synth({ operations: [getThing, { ...getThing, operationId: 'getThingAgain' }], jobs: [] })).toThrow(
      /Duplicate route in the registries: GET \/api\/v1\/things\/\{thing_id\}/,
    );
    expect(() => synth({ operations: [], jobs: [{ ...work, timeoutSeconds: 90 } as JobDefinition] })).toThrow(
      /visibilityTimeoutSeconds \(60\) must be at least 6 × the function timeout \(90 s\)/,
    );
    expect(() => synth({ operations: [], jobs: [{ ...work, visibilityTimeoutSeconds: 50 } as JobDefinition] })).toThrow(
      /visibilityTimeoutSeconds \(50\) must be at least 6 × the function timeout \(10 s\) = 60/,
    );
    expect(() => synth({ operations: [], jobs: [{ ...work, maxReceiveCount: 3 } as JobDefinition] })).toThrow(/maxReceiveCount \(3\) must be at least 5/);
    expect(() => synth({ operations: [], jobs: [{ ...work, maxConcurrency: 1 } as JobDefinition] })).toThrow(/maxConcurrency \(1\) must be an integer from 2 to 1000/);
  });
});

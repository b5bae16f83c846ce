import { operations } from '../../shared/http/registry';
import { jobs } from '../../shared/jobs/registry';
import { TELEPHONY_ROUTE_THROTTLE, WIDGET_ROUTE_THROTTLE } from '../../lib/api';
import { DEFAULT_RESERVED_CONCURRENCY } from '../../lib/api-area';
import { METRICS_NAMESPACE, METRICS_SERVICE, MODEL_ERROR_KINDS, PLATFORM_METRICS, REPLY_CHANNELS, TOOL_TYPES } from '../../shared/telemetry/metrics';
import { actionsOf, byDescription, synth, type FoundResource, type Synthesized } from './synth';

/** A dashboard body (an `Fn::Join` of text and references) as JSON, each reference written `<Ref id>` or `<GetAtt id.attr>`. */
function dashboardJson(body: unknown): any {
  const join = (body as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
  const text = join[1]
    .map((part) => {
      if (typeof part === 'string') return part;
      const ref = part as { Ref?: string; 'Fn::GetAtt'?: [string, string] };
      return ref.Ref ? `<Ref ${ref.Ref}>` : `<GetAtt ${ref['Fn::GetAtt']![0]}.${ref['Fn::GetAtt']![1]}>`;
    })
    .join(join[0]);
  return JSON.parse(text);
}

/** What a production deployment needs beyond working (issue 41): route limits, streaming timeouts, caps, alarms and a dashboard. */
describe('production needs', () => {
  let s: Synthesized;
  beforeAll(() => {
    s = synth({ llm: { provider: 'openai' }, analysis: { provider: 'openai' } });
  });
  const alarm = (prefix: string) => s.resources('AWS::CloudWatch::Alarm').filter((a) => String(a.Properties.AlarmDescription).startsWith(prefix));
  const httpStage = () => s.resources('AWS::ApiGatewayV2::Stage').find((st) => st.Properties.StageName === '$default')!;
  const description = (fn: FoundResource) => String(fn.Properties.Description);

  it("gives Twilio's callbacks and the widget's public routes limits of their own, and the stage waits for their routes", () => {
    const settings = httpStage().Properties.RouteSettings as Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }>;
    const twilio = operations.filter((op) => op.path.startsWith('/api/v1/telephony/twilio/'));
    const widget = operations.filter((op) => !op.auth && op.path.startsWith('/api/v1/widget/'));
    expect(twilio.length).toBeGreaterThan(3);
    expect(widget.length).toBeGreaterThan(3);
    for (const op of twilio) expect([op.operationId, settings[`${op.method} ${op.path}`]]).toEqual([op.operationId, { ThrottlingRateLimit: TELEPHONY_ROUTE_THROTTLE.rateLimit, ThrottlingBurstLimit: TELEPHONY_ROUTE_THROTTLE.burstLimit }]);
    for (const op of widget) expect([op.operationId, settings[`${op.method} ${op.path}`]]).toEqual([op.operationId, { ThrottlingRateLimit: WIDGET_ROUTE_THROTTLE.rateLimit, ThrottlingBurstLimit: WIDGET_ROUTE_THROTTLE.burstLimit }]);
    expect(Object.keys(settings).sort()).toEqual([...twilio, ...widget].map((op) => `${op.method} ${op.path}`).sort());
    // RouteSettings may name only routes that exist: the stage depends on the area stacks that hold them.
    const dependsOn = JSON.stringify(s.parent.toJSON().Resources[httpStage().logicalId].DependsOn ?? []);
    expect(dependsOn).toMatch(/TelephonyApi/);
    expect(dependsOn).toMatch(/WidgetApi/);
  });

  it('lets streamed responses run the 15 minutes REST response streaming allows, and keeps the HTTP API functions within its 30 s', () => {
    const methods = s.resources('AWS::ApiGateway::Method');
    expect(methods.length).toBeGreaterThan(0);
    for (const method of methods) expect(method.Properties.Integration).toMatchObject({ ResponseTransferMode: 'STREAM', TimeoutInMillis: 900_000 });
    const functions = s.resources('AWS::Lambda::Function');
    const streamed = functions.filter((fn) => / \(streamed\): /.test(description(fn)));
    expect(streamed.length).toBe(methods.length);
    for (const fn of streamed) expect([description(fn), fn.Properties.Timeout]).toEqual([description(fn), 900]);
    const http = functions.filter((fn) => operations.some((op) => description(fn).startsWith(`${op.method} ${op.path}: `)));
    expect(http).toHaveLength(operations.length);
    for (const fn of http) expect([description(fn), fn.Properties.Timeout <= 30]).toEqual([description(fn), true]);
  });

  it('caps the concurrency of the public widget functions that do work and of the model-calling functions, and of no others', () => {
    const capped = (fn: FoundResource) => fn.Properties.ReservedConcurrentExecutions;
    for (const op of operations) {
      const fn = byDescription(s, `${op.method} ${op.path}: `);
      const widget = !op.auth && op.method === 'POST' && op.path.startsWith('/api/v1/widget/');
      const model = !!(op.access.llm || op.access.analysis);
      const expected = widget ? DEFAULT_RESERVED_CONCURRENCY.widget : model ? DEFAULT_RESERVED_CONCURRENCY.model : undefined;
      expect([op.operationId, capped(fn)]).toEqual([op.operationId, expected]);
    }
    expect(capped(byDescription(s, 'POST /api/v1/widget/{id}/chats/{chat_id}/messages (streamed): '))).toBe(DEFAULT_RESERVED_CONCURRENCY.widget);
    expect(capped(byDescription(s, 'POST /api/v1/openai/v1/chat/completions (streamed): '))).toBe(DEFAULT_RESERVED_CONCURRENCY.model);
    const reserved = s.resources('AWS::Lambda::Function').reduce((sum, fn) => sum + (capped(fn) ?? 0), 0);
    // Lambda keeps 100 of the default 1,000 unreserved: the defaults must leave far more than that.
    expect(reserved).toBeLessThanOrEqual(400);
  });

  it('alarms on throttled requests of both APIs, the HTTP API p99 latency, the streaming API 5xx and the table throttles', () => {
    const [apiThrottles] = alarm('The API answered at least 50 429 responses');
    const filters = s.resources('AWS::Logs::MetricFilter');
    const filter = filters.find((f) => f.Properties.MetricTransformations[0].MetricName === apiThrottles.Properties.MetricName)!;
    expect(filter.Properties.FilterPattern).toBe('{ $.status = "429" }');
    expect(alarm('The streaming API answered at least 50 429 responses')).toHaveLength(1);
    const [latency] = alarm("The API's p99 latency");
    expect(latency.Properties).toMatchObject({ ExtendedStatistic: 'p99', MetricName: 'Latency', Namespace: 'AWS/ApiGateway', EvaluationPeriods: 3 });
    const [streaming5xx] = alarm('The streaming API answered at least 5 5xx');
    expect(streaming5xx.Properties).toMatchObject({ MetricName: '5XXError', Namespace: 'AWS/ApiGateway' });
    const [table] = alarm('The table throttled');
    const metrics = (table.Properties.Metrics as Array<{ MetricStat?: { Metric: { MetricName: string } } }>).flatMap((m) => (m.MetricStat ? [m.MetricStat.Metric.MetricName] : []));
    expect(metrics.sort()).toEqual(['ReadThrottleEvents', 'WriteThrottleEvents']);
    for (const a of [apiThrottles, latency, streaming5xx, table]) expect(a.Properties.AlarmActions).toHaveLength(1);
  });

  it('alarms on the age of the oldest message of every queue', () => {
    const queueJobs = jobs.filter((job) => job.kind === 'queue');
    const ages = s.resources('AWS::CloudWatch::Alarm').filter((a) => a.Properties.MetricName === 'ApproximateAgeOfOldestMessage');
    expect(ages).toHaveLength(queueJobs.length);
    for (const job of queueJobs) expect(ages.filter((a) => String(a.Properties.AlarmDescription).includes(`queue ${job.name} `))).toHaveLength(1);
    // Each on a source queue, never a dead-letter queue (those have their own alarm).
    for (const a of ages) expect(JSON.stringify(a.Properties.Dimensions)).not.toMatch(/DeadLetter/);
  });

  it('has one dashboard of the platform: APIs, functions, queues, table, the voice runtime and the alarms', () => {
    const [dashboard] = s.resources('AWS::CloudWatch::Dashboard');
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    for (const title of ['API requests and errors', 'API latency (p50, p99)', 'Streaming API', 'Functions (account)', 'Queues: age of the oldest message', 'Table: capacity used and throttles', 'Voice runtime: open calls', 'Alarms']) {
      expect(body).toContain(title);
    }
    expect(body).toContain('OpenCalls');
  });

  it('shows the platform metrics (shared/telemetry/metrics.ts), each line named by its one bounded dimension, and alarms on model errors', () => {
    const [dashboard] = s.resources('AWS::CloudWatch::Dashboard');
    // Every metric line of the namespace: [namespace, name, dimension, value, …, options].
    const lines = (dashboardJson(dashboard!.Properties.DashboardBody).widgets as any[])
      .flatMap((w) => (w.properties?.metrics ?? []) as unknown[][])
      .filter((m) => m[0] === METRICS_NAMESPACE && m[1] !== 'OpenCalls');
    const dimensionsOf = (m: unknown[]) => Object.fromEntries(m.slice(2, -1).reduce<string[][]>((pairs, v, i) => (i % 2 ? pairs.at(-1)!.push(String(v)) : pairs.push([String(v)]), pairs), []));
    const valuesOf = (name: string) => lines.filter((m) => m[1] === name).map((m) => dimensionsOf(m));
    for (const m of lines) {
      const dimensions = dimensionsOf(m);
      const metric = Object.values(PLATFORM_METRICS).find((p) => p.name === m[1])!;
      // The service and the metric's own dimension, nothing else (no organization, agent or call).
      expect([m[1], Object.keys(dimensions).sort()]).toEqual([metric.name, ['service', metric.dimension].sort()]);
      expect(dimensions.service).toBe(METRICS_SERVICE);
    }
    const values = (name: string, dimension: string) => [...new Set(valuesOf(name).map((d) => d[dimension]))].sort();
    expect(values('Replies', 'Channel')).toEqual([...REPLY_CHANNELS].sort());
    expect(values('ReplyLatency', 'Channel')).toEqual([...REPLY_CHANNELS].sort());
    expect(lines.filter((m) => m[1] === 'ReplyLatency').map((m) => (m.at(-1) as { stat: string }).stat)).toEqual([...REPLY_CHANNELS.map(() => 'p50'), ...REPLY_CHANNELS.map(() => 'p99')]);
    expect(values('ModelErrors', 'Kind')).toEqual([...MODEL_ERROR_KINDS].sort());
    expect(values('ToolErrors', 'ToolType')).toEqual([...TOOL_TYPES].sort());
    expect(values('CallsInProgress', 'Channel')).toEqual(['realtime', 'web']);
    // A queue's wait is read under the name SQS gives the queue (the worker's Queue dimension), labelled with its job.
    const waits = lines.filter((m) => m[1] === 'QueueWait');
    const queueJobs = jobs.filter((job) => job.kind === 'queue');
    expect(waits.map((m) => (m.at(-1) as { label: string }).label).sort()).toEqual(queueJobs.map((j) => j.name).sort());
    for (const m of waits) {
      const job = queueJobs.find((j) => j.name === (m.at(-1) as { label: string }).label)!;
      expect(dimensionsOf(m).Queue).toMatch(new RegExp(`^<GetAtt Jobs${job.name.replace(/(^|-)(\w)/g, (_x, _d, c: string) => c.toUpperCase())}Queue[0-9A-F]{8}\.QueueName>$`));
    }

    const [modelAlarm] = alarm('The model failed at least');
    const queried = (modelAlarm!.Properties.Metrics as any[]).filter((q) => q.MetricStat);
    expect(queried.map((q) => q.MetricStat.Metric.Dimensions.find((d: any) => d.Name === 'Kind').Value).sort()).toEqual([...MODEL_ERROR_KINDS].sort());
    for (const q of queried) expect([q.MetricStat.Metric.Namespace, q.MetricStat.Metric.MetricName]).toEqual([METRICS_NAMESPACE, 'ModelErrors']);
  });

  it('lets the relay answer a hand-off and an ending: relay-default may send to event-fanout and the call-end queues', () => {
    const fn = byDescription(s, 'Relay $default: ');
    const sends = s.statementsOf(fn).filter((st) => actionsOf(st).includes('sqs:SendMessage'));
    const queues = sends.map((st) => JSON.stringify(st.Resource));
    expect(queues.some((q) => /EventFanoutQueue/.test(q))).toBe(true);
    expect(queues.some((q) => /CallAnalysisQueue/.test(q))).toBe(true);
    expect(queues.some((q) => /CampaignDispatchQueue/.test(q))).toBe(true);
    expect(Object.keys(fn.Properties.Environment.Variables)).toEqual(expect.arrayContaining(['QUEUE_URL_EVENT_FANOUT', 'QUEUE_URL_CALL_ANALYSIS', 'QUEUE_URL_CAMPAIGN_DISPATCH']));
  });
});

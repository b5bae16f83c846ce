import { Duration, Validations } from 'aws-cdk-lib';
import type * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { METRICS_NAMESPACE, METRICS_SERVICE, MODEL_ERROR_KINDS, PLATFORM_METRICS, REPLY_CHANNELS, TOOL_TYPES } from '../shared/telemetry/metrics';

export interface MonitoringProps {
  /** Address subscribed to the alarm topic; none by default (subscribe by hand or via chat tooling). */
  alarmEmail?: string;
}

/** Metric namespace of the platform's own metrics (from logs: throttled requests; the functions' and the voice runtime's EMF). */
export const PLATFORM_NAMESPACE = METRICS_NAMESPACE;

/** One of the platform's metrics (shared/telemetry/metrics.ts) for one value of its dimension, labelled with that value. */
export function platformMetric(metric: { name: string; dimension: string }, value: string, props: { statistic: string; period: Duration; label?: string }): cloudwatch.Metric {
  return new cloudwatch.Metric({ namespace: METRICS_NAMESPACE, metricName: metric.name, dimensionsMap: { service: METRICS_SERVICE, [metric.dimension]: value }, label: value, ...props });
}

/** A queue whose oldest message waits longer than this is not being worked (consumers failing, throttled or capped). */
export const QUEUE_AGE_ALARM_SECONDS = 30 * 60;

/** What the dashboard shows (addDashboard). */
export interface DashboardParts {
  api: apigwv2.HttpApi;
  streamingApi?: apigw.RestApi;
  table: dynamodb.ITable;
  queues: ReadonlyMap<string, sqs.IQueue>;
  /** The voice runtime's open calls and running tasks, when it is deployed here. */
  voice?: { openCalls: cloudwatch.IMetric; runningTasks: cloudwatch.IMetric };
}

/** The alarm topic, the alarms that notify it, and the platform's dashboard. */
export class Monitoring extends Construct {
  readonly topic: sns.Topic;
  dashboard?: cloudwatch.Dashboard;
  private readonly action: actions.SnsAction;
  /** Every alarm made through `alarm` (the dashboard's status widget lists them). */
  private readonly alarms: cloudwatch.IAlarm[] = [];

  constructor(scope: Construct, id: string, props: MonitoringProps = {}) {
    super(scope, id);
    this.topic = new sns.Topic(this, 'AlarmTopic', { displayName: 'Voice Agent Platform alarms', enforceSSL: true });
    Validations.of(this.topic).acknowledge({
      id: 'AwsSolutions-SNS2',
      reason:
        'Alarm notifications carry only alarm names, metrics and states, no customer data. CloudWatch ' +
        'cannot publish to a topic under the AWS-managed SNS key, and a customer key would add cost and a ' +
        'key policy for nothing sensitive.',
    });
    if (props.alarmEmail) this.topic.addSubscription(new subscriptions.EmailSubscription(props.alarmEmail));
    this.action = new actions.SnsAction(this.topic);
  }

  /** Sends an alarm's state changes (into alarm and back to OK) to the topic. */
  notify(alarm: cloudwatch.Alarm): void {
    alarm.addAlarmAction(this.action);
    alarm.addOkAction(this.action);
  }

  /**
   * Alarms when a function fails: a crash, a timeout or an error the handler did not turn into
   * a response. Handled errors become 500 envelopes and are caught by the API's 5xx alarm.
   */
  alarmOnErrors(fn: lambda.Function): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(fn, 'ErrorsAlarm', {
      alarmDescription: `${fn.node.id} failed (crash, timeout or unhandled error)`,
      metric: fn.metricErrors({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
      threshold: 1,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.notify(alarm);
    return alarm;
  }

  /** Alarms when the API answers 5xx responses (handled 500s, 502s from failed integrations, 503s). */
  alarmOnServerErrors(api: apigwv2.HttpApi, threshold = 5): cloudwatch.Alarm {
    return this.alarm('Api5xxAlarm', {
      alarmDescription: `The API answered at least ${threshold} 5xx responses in 5 minutes`,
      metric: api.metricServerError({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
      threshold,
    });
  }

  /**
   * Alarms when an API answers many 429s: a route's or the stage's throttle, or keys over their
   * per-minute limit (RATE_LIMIT_PER_MINUTE). Counted from the access log (a metric filter on its
   * `status`), which both APIs write and which names every 429 whoever answered it.
   */
  alarmOnThrottles(id: string, api: string, accessLogs: logs.ILogGroup, threshold = 50): cloudwatch.Alarm {
    const filter = new logs.MetricFilter(this, `${id}Throttled`, {
      logGroup: accessLogs,
      filterPattern: logs.FilterPattern.stringValue('$.status', '=', '429'),
      metricNamespace: PLATFORM_NAMESPACE,
      metricName: `${id}Throttled`,
      metricValue: '1',
      defaultValue: 0,
    });
    return this.alarm(`${id}ThrottlesAlarm`, {
      alarmDescription: `${api} answered at least ${threshold} 429 responses in 5 minutes (throttled, or keys over their limit)`,
      metric: filter.metric({ statistic: cloudwatch.Stats.SUM, period: Duration.minutes(5) }),
      threshold,
    });
  }

  /** Alarms when the HTTP API's p99 latency stays above `thresholdMs` for 15 minutes (a turn may take 25 s; most requests take well under one). */
  alarmOnLatency(api: apigwv2.HttpApi, thresholdMs = 10_000): cloudwatch.Alarm {
    return this.alarm('ApiLatencyAlarm', {
      alarmDescription: `The API's p99 latency stayed above ${thresholdMs / 1000} s for 15 minutes`,
      metric: api.metricLatency({ statistic: cloudwatch.Stats.p(99), period: Duration.minutes(5) }),
      threshold: thresholdMs,
      evaluationPeriods: 3,
      comparison: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    });
  }

  /** Alarms when the streaming REST API answers 5xx (a function that failed before or while streaming). */
  alarmOnStreamingServerErrors(api: apigw.RestApi, threshold = 5): cloudwatch.Alarm {
    return this.alarm('StreamingApi5xxAlarm', {
      alarmDescription: `The streaming API answered at least ${threshold} 5xx responses in 5 minutes`,
      metric: api.metricServerError({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
      threshold,
    });
  }

  /** Alarms when a queue's oldest message has waited QUEUE_AGE_ALARM_SECONDS: its worker is failing, throttled or capped below the load. */
  alarmOnQueueAge(scope: Construct, id: string, name: string, queue: sqs.IQueue): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(scope, `${id}AgeAlarm`, {
      alarmDescription: `The oldest message of queue ${name} has waited more than ${QUEUE_AGE_ALARM_SECONDS / 60} minutes`,
      metric: queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(5), statistic: cloudwatch.Stats.MAXIMUM }),
      threshold: QUEUE_AGE_ALARM_SECONDS,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.notify(alarm);
    return alarm;
  }

  /**
   * Alarms when the model fails many requests (every kind: a provider outage, a revoked key, rate
   * limits): turns answer 502/503 and calls apologize. The dashboard shows which kind.
   */
  alarmOnModelErrors(threshold = 10): cloudwatch.Alarm {
    const period = Duration.minutes(5);
    const usingMetrics = Object.fromEntries(MODEL_ERROR_KINDS.map((kind, i) => [`m${i}`, platformMetric(PLATFORM_METRICS.modelErrors, kind, { statistic: cloudwatch.Stats.SUM, period })]));
    return this.alarm('ModelErrorsAlarm', {
      alarmDescription: `The model failed at least ${threshold} requests in 5 minutes (the dashboard's "Model errors" shows their kinds)`,
      metric: new cloudwatch.MathExpression({ expression: Object.keys(usingMetrics).map((id) => `FILL(${id}, 0)`).join(' + '), usingMetrics, period, label: 'Model errors' }),
      threshold,
    });
  }

  /** Alarms when the table throttles reads or writes (on demand it still throttles a partition above its limits, or a sudden peak past twice the previous one). */
  alarmOnTableThrottles(table: dynamodb.ITable, threshold = 10): cloudwatch.Alarm {
    const events = (metricName: string) => table.metric(metricName, { statistic: cloudwatch.Stats.SUM, period: Duration.minutes(5) });
    return this.alarm('TableThrottlesAlarm', {
      alarmDescription: `The table throttled at least ${threshold} requests in 5 minutes`,
      metric: new cloudwatch.MathExpression({
        expression: 'FILL(reads, 0) + FILL(writes, 0)',
        usingMetrics: { reads: events('ReadThrottleEvents'), writes: events('WriteThrottleEvents') },
        period: Duration.minutes(5),
        label: 'Throttled requests',
      }),
      threshold,
    });
  }

  /** One dashboard of the platform: both APIs, the functions account-wide, the queues, the table and the voice runtime. */
  addDashboard(parts: DashboardParts): cloudwatch.Dashboard {
    const fiveMinutes = { period: Duration.minutes(5) };
    const lambdaMetric = (metricName: string, statistic: string) => new cloudwatch.Metric({ namespace: 'AWS/Lambda', metricName, statistic, ...fiveMinutes });
    const widgets: cloudwatch.IWidget[][] = [
      [
        new cloudwatch.GraphWidget({ title: 'API requests and errors', left: [parts.api.metricCount(fiveMinutes), parts.api.metricClientError(fiveMinutes), parts.api.metricServerError(fiveMinutes)], width: 8 }),
        new cloudwatch.GraphWidget({
          title: 'API latency (p50, p99)',
          left: [parts.api.metricLatency({ ...fiveMinutes, statistic: cloudwatch.Stats.p(50) }), parts.api.metricLatency({ ...fiveMinutes, statistic: cloudwatch.Stats.p(99) })],
          width: 8,
        }),
        ...(parts.streamingApi
          ? [new cloudwatch.GraphWidget({ title: 'Streaming API', left: [parts.streamingApi.metricCount(fiveMinutes), parts.streamingApi.metricServerError(fiveMinutes)], right: [parts.streamingApi.metricLatency({ ...fiveMinutes, statistic: cloudwatch.Stats.p(99) })], width: 8 })]
          : []),
      ],
      [
        new cloudwatch.GraphWidget({ title: 'Functions (account): concurrency and throttles', left: [lambdaMetric('ConcurrentExecutions', cloudwatch.Stats.MAXIMUM)], right: [lambdaMetric('Throttles', cloudwatch.Stats.SUM), lambdaMetric('Errors', cloudwatch.Stats.SUM)], width: 8 }),
        new cloudwatch.GraphWidget({
          title: 'Queues: age of the oldest message (s)',
          left: [...parts.queues].map(([name, queue]) => queue.metricApproximateAgeOfOldestMessage({ ...fiveMinutes, statistic: cloudwatch.Stats.MAXIMUM, label: name })),
          width: 8,
        }),
        new cloudwatch.GraphWidget({
          title: 'Table: capacity used and throttles',
          left: [parts.table.metricConsumedReadCapacityUnits(fiveMinutes), parts.table.metricConsumedWriteCapacityUnits(fiveMinutes)],
          right: ['ReadThrottleEvents', 'WriteThrottleEvents'].map((m) => parts.table.metric(m, { ...fiveMinutes, statistic: cloudwatch.Stats.SUM })),
          width: 8,
        }),
      ],
      ...this.platformWidgets(parts.queues),
      ...(parts.voice ? [[new cloudwatch.GraphWidget({ title: 'Voice runtime: open calls per task and running tasks', left: [parts.voice.openCalls], right: [parts.voice.runningTasks], width: 12 })]] : []),
      [new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24 })],
    ];
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', { widgets });
    return this.dashboard;
  }

  /**
   * The metrics the functions and the voice runtime write (shared/telemetry/metrics.ts): replies and
   * their end-to-end time by channel, model errors by kind, tool errors by type, calls in progress,
   * queue waits. Each dimension's values are known here, so every line is named.
   */
  private platformWidgets(queues: ReadonlyMap<string, sqs.IQueue>): cloudwatch.IWidget[][] {
    const period = Duration.minutes(5);
    const sum = { statistic: cloudwatch.Stats.SUM, period };
    const m = PLATFORM_METRICS;
    const byChannel = (statistic: string) => REPLY_CHANNELS.map((c) => platformMetric(m.replyLatency, c, { statistic, period, label: `${c} ${statistic}` }));
    return [
      [
        new cloudwatch.GraphWidget({ title: 'Replies by channel', left: REPLY_CHANNELS.map((c) => platformMetric(m.replies, c, sum)), width: 8 }),
        new cloudwatch.GraphWidget({ title: 'Reply end-to-end latency (ms): p50, p99 by channel', left: [...byChannel(cloudwatch.Stats.p(50)), ...byChannel(cloudwatch.Stats.p(99))], width: 8 }),
        new cloudwatch.GraphWidget({
          title: 'Model errors by kind; tool errors by type',
          left: MODEL_ERROR_KINDS.map((k) => platformMetric(m.modelErrors, k, sum)),
          right: TOOL_TYPES.map((t) => platformMetric(m.toolErrors, t, { ...sum, label: `tool: ${t}` })),
          width: 8,
        }),
      ],
      [
        new cloudwatch.GraphWidget({
          title: 'Calls in progress (voice runtime, all tasks)',
          // Each task writes its count once a minute: their sum per minute is the total.
          left: (['realtime', 'web'] as const).map((c) => platformMetric(m.callsInProgress, c, { statistic: cloudwatch.Stats.SUM, period: Duration.minutes(1) })),
          width: 12,
        }),
        new cloudwatch.GraphWidget({
          title: 'Queue wait (ms, p99): send to handling',
          left: [...queues].map(([name, queue]) => platformMetric(m.queueWait, queue.queueName, { statistic: cloudwatch.Stats.p(99), period, label: name })),
          width: 12,
        }),
      ],
    ];
  }

  private alarm(id: string, props: { alarmDescription: string; metric: cloudwatch.IMetric; threshold: number; evaluationPeriods?: number; comparison?: cloudwatch.ComparisonOperator }): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, {
      alarmDescription: props.alarmDescription,
      metric: props.metric,
      threshold: props.threshold,
      evaluationPeriods: props.evaluationPeriods ?? 1,
      comparisonOperator: props.comparison ?? cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.notify(alarm);
    this.alarms.push(alarm);
    return alarm;
  }
}

import { Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import type * as logs from 'aws-cdk-lib/aws-logs';
import * as scheduler from 'aws-cdk-lib/aws-scheduler';
import * as targets from 'aws-cdk-lib/aws-scheduler-targets';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { maxConcurrencyOf, queueJobProblems, type JobDefinition, type QueueJob, type ScheduledJob } from '../shared/jobs/definition';
import { acknowledgeGrantedResourceWildcard } from './acknowledge';
import { ApiFunction, type AccessTargets } from './api-function';
import type { CodeSource } from './bundle';
import type { Monitoring } from './monitoring';
import { pascalCase } from './names';

export interface JobsProps {
  jobs: JobDefinition[];
  code: CodeSource;
  environment: Record<string, string>;
  /** What job functions may be granted; the queues are the ones made here. */
  targets: Omit<AccessTargets, 'queues'>;
  monitoring: Monitoring;
  logRetention?: logs.RetentionDays;
}

/** The bundle name of a job's function. */
export function jobBundleName(job: JobDefinition): string {
  return `job-${job.name}`;
}

/**
 * Background work from the job registry: for each queue job a queue with a dead-letter queue
 * (and an alarm on it) feeding its worker; for each scheduled job an EventBridge Scheduler
 * schedule invoking its function. Every job function also gets an error alarm.
 */
export class Jobs extends Construct {
  /** Queues by job name, for the functions that send to them. */
  readonly queues = new Map<string, sqs.Queue>();
  readonly deadLetterQueues = new Map<string, sqs.Queue>();
  readonly functions = new Map<string, ApiFunction>();

  constructor(scope: Construct, id: string, props: JobsProps) {
    super(scope, id);
    const queueJobs = props.jobs.filter((job): job is QueueJob => job.kind === 'queue');
    const scheduledJobs = props.jobs.filter((job): job is ScheduledJob => job.kind === 'schedule');

    // Every queue first: a job function may send to any of them (the dispatcher queues call jobs).
    for (const job of queueJobs) this.addQueue(job, props.monitoring);
    const targetsWithQueues: AccessTargets = { ...props.targets, queues: this.queues };

    for (const job of props.jobs) {
      const fn = new ApiFunction(this, `${pascalCase(job.name)}Function`, {
        code: props.code.code(jobBundleName(job)),
        description: `Job ${job.name}: ${job.description}`,
        environment: props.environment,
        memoryMb: job.memoryMb,
        timeoutSeconds: job.timeoutSeconds,
        logRetention: props.logRetention,
      });
      fn.applyAccess(job.access, targetsWithQueues, `Job ${job.name}`);
      props.monitoring.alarmOnErrors(fn);
      this.functions.set(job.name, fn);
    }
    for (const job of queueJobs) this.addWorker(job);
    for (const job of scheduledJobs) this.addSchedule(job);
  }

  private addQueue(job: QueueJob, monitoring: Monitoring): void {
    const id = pascalCase(job.name);
    const deadLetters = new sqs.Queue(this, `${id}DeadLetterQueue`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // The longest SQS allows: time to find the cause and redrive.
      retentionPeriod: Duration.days(14),
    });
    const queue = new sqs.Queue(this, `${id}Queue`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(job.visibilityTimeoutSeconds),
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: job.maxReceiveCount },
    });
    const alarm = new cloudwatch.Alarm(this, `${id}DeadLettersAlarm`, {
      alarmDescription: `Messages of job ${job.name} failed ${job.maxReceiveCount} times and wait in its dead-letter queue`,
      metric: deadLetters.metricApproximateNumberOfMessagesVisible({
        period: Duration.minutes(1),
        statistic: cloudwatch.Stats.MAXIMUM,
      }),
      threshold: 0,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    monitoring.notify(alarm);
    monitoring.alarmOnQueueAge(this, id, job.name, queue);
    this.queues.set(job.name, queue);
    this.deadLetterQueues.set(job.name, deadLetters);
  }

  private addWorker(job: QueueJob): void {
    const fn = this.functions.get(job.name)!;
    // Visibility timeout, receive count and concurrency cap obey QUEUE_RULES; say so at synth time.
    const problems = queueJobProblems(job);
    if (problems.length) throw new Error(`Job ${job.name}: ${problems.join('; ')}.`);
    fn.addEventSource(
      new SqsEventSource(this.queues.get(job.name)!, {
        batchSize: job.batchSize,
        maxConcurrency: maxConcurrencyOf(job),
        // Above 10 messages, SQS requires a batching window.
        maxBatchingWindow: job.batchSize > 10 ? Duration.seconds(1) : undefined,
        reportBatchItemFailures: true,
      }),
    );
  }

  private addSchedule(job: ScheduledJob): void {
    const id = pascalCase(job.name);
    const fn: lambda.Function = this.functions.get(job.name)!;
    // A failed tick is not retried: the next one, a rate period later, does the same work.
    fn.configureAsyncInvoke({ retryAttempts: 0 });
    const role = new iam.Role(this, `${id}ScheduleRole`, {
      description: `Lets EventBridge Scheduler invoke job ${job.name}, nothing else`,
      assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
        conditions: { StringEquals: { 'aws:SourceAccount': Stack.of(this).account } },
      }),
    });
    new scheduler.Schedule(this, `${id}Schedule`, {
      description: `${job.name}: ${job.description}`.slice(0, 512),
      schedule: scheduler.ScheduleExpression.rate(Duration.minutes(job.rateMinutes)),
      target: new targets.LambdaInvoke(fn, {
        role,
        retryAttempts: 0,
        maxEventAge: Duration.minutes(Math.max(1, job.rateMinutes)),
      }),
    });
    acknowledgeGrantedResourceWildcard(
      role,
      fn.functionArn,
      ':*',
      "The CDK invoke grant covers this one function's versions and aliases (<function arn>:*); the role can invoke nothing else.",
    );
  }
}

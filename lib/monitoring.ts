import { Duration, Validations } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';

export interface MonitoringProps {
  /** Address subscribed to the alarm topic; none by default (subscribe by hand or via chat tooling). */
  alarmEmail?: string;
}

/** The alarm topic and the alarms that notify it. */
export class Monitoring extends Construct {
  readonly topic: sns.Topic;
  private readonly action: actions.SnsAction;

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
    const alarm = new cloudwatch.Alarm(this, 'Api5xxAlarm', {
      alarmDescription: `The API answered at least ${threshold} 5xx responses in 5 minutes`,
      metric: api.metricServerError({ period: Duration.minutes(5), statistic: cloudwatch.Stats.SUM }),
      threshold,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    this.notify(alarm);
    return alarm;
  }
}

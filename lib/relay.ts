import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { WebSocketLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { WebSocketRoute } from '../shared/http/websocket';
import { acknowledgeGrantedResourceWildcard } from './acknowledge';
import { ApiFunction, type AccessTargets } from './api-function';
import type { CodeSource } from './bundle';
import type { Monitoring } from './monitoring';
import { pascalCase } from './names';

/** The bundle name of a WebSocket route's function. */
export const relayBundleName = (route: WebSocketRoute): string => route.name;

/** The stage Twilio connects to (RELAY_URL is `wss://<api>.execute-api.<region>.amazonaws.com/<stage>`). */
export const RELAY_STAGE = 'live';

export interface RelayApiProps {
  /** The registry's WebSocket routes (shared/http/registry.ts `websocketRoutes`). */
  routes: WebSocketRoute[];
  code: CodeSource;
  environment: Record<string, string>;
  targets: AccessTargets;
  monitoring: Monitoring;
  logRetention?: logs.RetentionDays;
}

/**
 * The ConversationRelay WebSocket API (docs/api.md, "Two voice pipelines"): an API Gateway
 * WebSocket API whose `$connect`, `$default` and `$disconnect` routes are Lambda functions built
 * from the registry's WebSocket routes, each granted what its declaration names. The function that
 * answers (`$default`) may post to and close connections of this API's stage only
 * (execute-api:ManageConnections) and learns the Management API's endpoint as RELAY_CALLBACK_URL.
 * One stage with access logs and throttling; alarms on failing functions and integration errors.
 */
export class RelayApi extends Construct {
  readonly api: apigwv2.WebSocketApi;
  readonly stage: apigwv2.WebSocketStage;
  readonly functions = new Map<string, ApiFunction>();

  constructor(scope: Construct, id: string, props: RelayApiProps) {
    super(scope, id);
    const byKey = new Map(props.routes.map((r) => [r.routeKey, r]));
    for (const key of ['$connect', '$default', '$disconnect'] as const) {
      if (!byKey.has(key)) throw new Error(`The relay's WebSocket routes lack ${key}.`);
    }
    for (const route of props.routes) {
      const fn = new ApiFunction(this, `${pascalCase(route.name)}Function`, {
        code: props.code.code(relayBundleName(route)),
        description: `Relay ${route.routeKey}: ${route.description}`,
        environment: props.environment,
        memoryMb: route.memoryMb,
        timeoutSeconds: route.timeoutSeconds,
        logRetention: props.logRetention,
      });
      fn.applyAccess(route.access, props.targets, `Relay route ${route.routeKey}`);
      props.monitoring.alarmOnErrors(fn);
      this.functions.set(route.routeKey, fn);
    }
    const integration = (key: string) => ({ integration: new WebSocketLambdaIntegration(`${pascalCase(key.replace('$', ''))}Integration`, this.functions.get(key)!) });
    this.api = new apigwv2.WebSocketApi(this, 'Api', {
      apiName: 'voice-agent-platform-relay',
      description: 'Twilio ConversationRelay: caller utterances in, the agent\'s text tokens out',
      connectRouteOptions: integration('$connect'),
      defaultRouteOptions: integration('$default'),
      disconnectRouteOptions: integration('$disconnect'),
    });
    const accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.RETAIN });
    this.stage = new apigwv2.WebSocketStage(this, 'Stage', {
      webSocketApi: this.api,
      stageName: RELAY_STAGE,
      autoDeploy: true,
      throttle: { rateLimit: 500, burstLimit: 1000 },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(JSON.stringify({
          requestId: '$context.requestId', connectionId: '$context.connectionId', eventType: '$context.eventType', route: '$context.routeKey',
          status: '$context.status', ip: '$context.identity.sourceIp', requestTime: '$context.requestTimeEpoch', integrationLatency: '$context.integrationLatency', error: '$context.error.message',
        })),
      },
    });
    // `$connect` checks Twilio's signature over the URL Twilio opened (RELAY_URL), so every relay function knows it.
    for (const fn of this.functions.values()) fn.addEnvironment('RELAY_URL', this.url);
    // Replies: this stage's connections only.
    const answering = this.functions.get('$default')!;
    const manage = [answering];
    for (const fn of manage) {
      this.stage.grantManagementApiAccess(fn);
      fn.addEnvironment('RELAY_CALLBACK_URL', this.stage.callbackUrl);
      acknowledgeGrantedResourceWildcard(
        fn.role!,
        `${Stack.of(this).formatArn({ service: 'execute-api', resource: this.api.apiId })}/${RELAY_STAGE}`,
        '/*/@connections/*',
        'execute-api:ManageConnections on this WebSocket API\'s one stage: connection ids are made by API Gateway per call, so the grant names @connections/* of this stage only.',
      );
    }
    for (const route of this.api.node.findAll().filter((c) => c instanceof apigwv2.WebSocketRoute)) {
      Validations.of(route).acknowledge({
        id: 'AwsSolutions-APIG4',
        reason: '$connect admits a connection only with a short-lived, one-use signed token of a live call (checked in the function against the table, the same code the local runtime runs); messages of an admitted connection need no other authorizer.',
      });
    }
    const metric = (metricName: string) =>
      new cloudwatch.Metric({ namespace: 'AWS/ApiGateway', metricName, dimensionsMap: { ApiId: this.api.apiId, Stage: RELAY_STAGE }, statistic: cloudwatch.Stats.SUM, period: Duration.minutes(5) });
    // ExecutionError, not IntegrationError: the latter counts every 4xx a function answers, so each
    // refused handshake (a forged or reused token, which is the relay doing its job) would page.
    const alarm = new cloudwatch.Alarm(this, 'ExecutionErrorsAlarm', {
      alarmDescription: 'The relay WebSocket API failed to run its functions (execution errors; refused connections are not counted)',
      metric: metric('ExecutionError'),
      threshold: 5,
      evaluationPeriods: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    });
    props.monitoring.notify(alarm);
  }

  /** RELAY_URL: where Twilio opens ConversationRelay (`wss://…/live`). */
  get url(): string {
    return this.stage.url;
  }
}

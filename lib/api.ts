import { Lazy, RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Operation } from '../shared/http/operation';
import { pascalCase } from './names';

/** Stage-wide limits for the default route; per-key limits are the application's (RATE_LIMIT_PER_MINUTE). */
export interface ApiThrottle {
  /** Steady requests per second across all clients. */
  rateLimit: number;
  /** Requests allowed at once above the steady rate. */
  burstLimit: number;
}

export const DEFAULT_THROTTLE: ApiThrottle = { rateLimit: 100, burstLimit: 200 };

/**
 * Routes with limits of their own (the stage's RouteSettings), which override the default's for
 * them, so tuning the default (API_THROTTLE_*) for API-key traffic never moves them:
 * - Twilio's callbacks (`/telephony/twilio/*`): a throttled status or TwiML callback is a call
 *   that goes wrong, and Twilio does not retry most of them; so they get more than the default;
 * - the widget's public routes: anyone on the internet can call them with no key, so no per-key
 *   limit (RATE_LIMIT_PER_MINUTE) bounds them; their own, lower, limit does.
 */
export const TELEPHONY_ROUTE_THROTTLE: ApiThrottle = { rateLimit: 200, burstLimit: 400 };
export const WIDGET_ROUTE_THROTTLE: ApiThrottle = { rateLimit: 50, burstLimit: 100 };

/** The route-level limit of an operation's route, or none (it has the stage's default). */
export function routeThrottleOf(operation: Operation): ApiThrottle | undefined {
  if (operation.path.startsWith('/api/v1/telephony/twilio/')) return TELEPHONY_ROUTE_THROTTLE;
  if (!operation.auth && operation.path.startsWith('/api/v1/widget/')) return WIDGET_ROUTE_THROTTLE;
  return undefined;
}

export interface ApiProps {
  /** Answers every request no route matches (404, or 405 when the path exists with another method). */
  fallback: lambda.IFunction;
  throttle?: ApiThrottle;
  logRetention?: logs.RetentionDays;
}

// One JSON object per request, so Logs Insights can filter on any field. No header values:
// the API key must never reach a log.
const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  requestTime: '$context.requestTimeEpoch',
  method: '$context.httpMethod',
  path: '$context.path',
  route: '$context.routeKey',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  latency: '$context.responseLatency',
  integrationLatency: '$context.integrationLatency',
  integrationStatus: '$context.integrationStatus',
  integrationError: '$context.integrationErrorMessage',
  error: '$context.error.message',
  userAgent: '$context.identity.userAgent',
};

/**
 * The HTTP API: one stage with access logs and throttling, the `$default` route to the fallback
 * function, and `addOperation` for each registry operation. CORS is not configured here: the one
 * browser-facing endpoint (the public widget config) answers CORS itself.
 */
export class Api extends Construct {
  readonly httpApi: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly accessLogs: logs.LogGroup;
  /** Route-level limits by route key (`POST /api/v1/…`), rendered into the stage's RouteSettings. */
  private readonly routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};

  constructor(scope: Construct, id: string, props: ApiProps) {
    super(scope, id);
    this.httpApi = new apigwv2.HttpApi(this, 'HttpApi', {
      description: 'Voice AI Agent Platform API',
      createDefaultStage: false,
      defaultIntegration: new HttpLambdaIntegration('Fallback', props.fallback),
    });
    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    const throttle = props.throttle ?? DEFAULT_THROTTLE;
    this.stage = new apigwv2.HttpStage(this, 'Stage', {
      httpApi: this.httpApi,
      stageName: '$default',
      autoDeploy: true,
      throttle: { rateLimit: throttle.rateLimit, burstLimit: throttle.burstLimit },
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
    });
    (this.stage.node.defaultChild as apigwv2.CfnStage).routeSettings = Lazy.any({
      produce: () => (Object.keys(this.routeSettings).length ? this.routeSettings : undefined),
    });
    Validations.of(this.httpApi).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'The $default route answers only 404 and 405 envelopes and touches no data; it needs no authorizer.',
    });
  }

  /** The base URL clients call. */
  get url(): string {
    return this.stage.url;
  }

  /**
   * Routes `METHOD path` to the function. Only the path without a trailing slash can be a route:
   * API Gateway (and CDK's HttpRouteKey) reject route paths ending in "/". A `path/` request that
   * API Gateway does not match to the route itself lands on `$default`, so the fallback function
   * is where trailing-slash tolerance has to live in AWS.
   * The route is created in `scope` (the operation's area stack) to keep each stack small.
   */
  addOperation(scope: Construct, operation: Operation, fn: lambda.IFunction): apigwv2.HttpRoute {
    const id = pascalCase(operation.operationId);
    const route = new apigwv2.HttpRoute(scope, `${id}Route`, {
      httpApi: this.httpApi,
      routeKey: apigwv2.HttpRouteKey.with(operation.path, apigwv2.HttpMethod[operation.method]),
      integration: new HttpLambdaIntegration(`${id}Integration`, fn),
    });
    Validations.of(route).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason: operation.auth
        ? 'Authenticated inside the function by the shared Middy middleware (hashed API keys looked up in ' +
          'the table, per-key rate limits), the same code path the local runtime runs; an API Gateway ' +
          'authorizer would add a second lookup and latency to every call.'
        : `Public by design: ${operation.operationId} is declared auth: false in the route registry.`,
    });
    const throttle = routeThrottleOf(operation);
    if (throttle) {
      this.routeSettings[`${operation.method} ${operation.path}`] = { ThrottlingRateLimit: throttle.rateLimit, ThrottlingBurstLimit: throttle.burstLimit };
      // A stage's RouteSettings may name only routes that exist: the stage waits for this one (its area's stack).
      this.stage.node.addDependency(route);
    }
    return route;
  }
}

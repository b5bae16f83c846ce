import { Aws, Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as apigw from 'aws-cdk-lib/aws-apigateway';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { Operation } from '../shared/http/operation';
import type { ApiThrottle } from './api';

export interface StreamingApiProps {
  throttle?: ApiThrottle;
  logRetention?: logs.RetentionDays;
}

/**
 * Whether the operation is served on the streaming REST API too: it may stream, or it is one of
 * the OpenAI-compatible routes (an SDK takes one base URL for models, retrieve and completions).
 */
export const servedByStreamingApi = (operation: Operation): boolean => !!operation.streams || !!operation.openAiCompatible;

/**
 * How long a streamed response may run, and so the integration's timeout and its functions'.
 * API Gateway's REST response streaming ("Stream the integration response for your proxy
 * integrations", developer guide, response-transfer-mode): a stream lasts at most 15 minutes, is
 * cut after 5 minutes without a byte on a regional endpoint (30 s edge-optimized), and with
 * `responseTransferMode: STREAM` the integration timeout may be set up to 15 minutes without a
 * quota increase (not the buffered 29 s). A turn's own budget (TURN_BUDGET_MS) still ends it far
 * sooner; this only stops the gateway and Lambda cutting a stream that is still writing.
 */
export const STREAMING_TIMEOUT = Duration.minutes(15);

/** The stage: part of the base URL, known before the stage exists (see `functionsUrl`). */
const STAGE = 'v1';

/**
 * The routes that stream (`streams: true` in the registry: chat turns with
 * `Accept: text/event-stream`, the widget's turns and their CORS preflights, the
 * OpenAI-compatible completions) on a REST API whose Lambda proxy
 * integrations use `responseTransferMode: STREAM`: an HTTP API cannot stream a response, and a
 * REST API can (docs/api.md, "Streaming a turn"). Each route invokes the operation's `streamHandler`
 * (shared/http/streaming.ts), which runs the same Middy stack as the HTTP API's function: API-key
 * authentication, rate limits, validation and envelopes stay in the function, so no authorizer
 * is added here. Same paths as the HTTP API; every other route stays there.
 */
export class StreamingApi extends Construct {
  readonly restApi: apigw.RestApi;
  readonly accessLogs: logs.LogGroup;

  constructor(scope: Construct, id: string, props: StreamingApiProps = {}) {
    super(scope, id);
    this.accessLogs = new logs.LogGroup(this, 'AccessLogs', { retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH, removalPolicy: RemovalPolicy.RETAIN });
    this.restApi = new apigw.RestApi(this, 'RestApi', {
      description: 'Voice AI Agent Platform API: the streaming routes (server-sent events)',
      endpointTypes: [apigw.EndpointType.REGIONAL],
      cloudWatchRole: false,
      deployOptions: {
        stageName: STAGE,
        tracingEnabled: true,
        throttlingRateLimit: props.throttle?.rateLimit ?? 100,
        throttlingBurstLimit: props.throttle?.burstLimit ?? 200,
        accessLogDestination: new apigw.LogGroupLogDestination(this.accessLogs),
        accessLogFormat: apigw.AccessLogFormat.jsonWithStandardFields({ caller: false, httpMethod: true, ip: true, protocol: true, requestTime: true, resourcePath: true, responseLength: true, status: true, user: false }),
      },
    });
    Validations.of(this.restApi).acknowledge(
      { id: 'AwsSolutions-APIG2', reason: 'Requests are validated inside the function by the same zod schemas and middleware as the HTTP API (400 envelopes naming the field).' },
      { id: 'AwsSolutions-APIG3', reason: 'Same exposure as the HTTP API, which has no WAF either: per-key rate limits in the function and stage throttling.' },
      { id: 'AwsSolutions-APIG4', reason: 'Authenticated inside the function by the shared Middy middleware (hashed API keys, per-key rate limits), as on the HTTP API.' },
      { id: 'AwsSolutions-COG4', reason: 'API keys, not Cognito users, authenticate callers; the function checks them.' },
      { id: 'AwsSolutions-APIG6', reason: 'Access logs are on (JSON, per request); execution logging would need an account-wide CloudWatch role and logs request details.' },
    );
  }

  /** The base URL: the same paths as the HTTP API under it. */
  get url(): string {
    return this.restApi.url.replace(/\/$/, '');
  }

  /**
   * The same base URL for the functions' environment (STREAMING_API_URL: the widget's config tells
   * the script to stream its turns there). Built from the API's id and the stage's literal name:
   * `url` names the stage resource, which waits for every method, whose functions would then wait
   * for it (a dependency cycle).
   */
  get functionsUrl(): string {
    return `https://${this.restApi.restApiId}.execute-api.${Aws.REGION}.${Aws.URL_SUFFIX}/${STAGE}`;
  }

  /** Routes `METHOD path` to the operation's streaming function. */
  addOperation(operation: Operation, fn: lambda.IFunction): void {
    const resource = this.restApi.root.resourceForPath(operation.path);
    resource.addMethod(
      operation.method,
      new apigw.LambdaIntegration(fn, { proxy: true, responseTransferMode: apigw.ResponseTransferMode.STREAM, timeout: STREAMING_TIMEOUT }),
    );
  }
}

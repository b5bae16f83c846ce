import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { CfnOutput, Stack, Stage, type StackProps } from 'aws-cdk-lib';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { Operation } from '../shared/http/operation';
import { fallbackEntry as registryFallbackEntry, operations as registryOperations, websocketRoutes as registryWebsocketRoutes } from '../shared/http/registry';
import type { WebSocketRoute } from '../shared/http/websocket';
import type { JobDefinition } from '../shared/jobs/definition';
import { jobs as registryJobs } from '../shared/jobs/registry';
import { Analysis, type AnalysisProps } from './analysis';
import { Api, type ApiThrottle } from './api';
import { ApiArea, apiArea, operationBundleName, type ReservedConcurrency } from './api-area';
import { StreamingApi } from './streaming-api';
import { ApiFunction } from './api-function';
import { bundledCode, placeholderCode, type BundleEntry, type CodeSource } from './bundle';
import { Data } from './data';
import { Jobs, jobBundleName } from './jobs';
import { Llm, type LlmProps } from './llm';
import { Monitoring } from './monitoring';
import { pascalCase } from './names';
import { RelayApi, relayBundleName } from './relay';
import { Storage } from './storage';
import { Telephony, type TelephonyProps } from './telephony';
import { TokenSigning } from './tokens';
import { VoiceRuntime } from './voice';
import { objectKeys } from '../shared/domain/rag/object-keys';

/** Repository root: entry files in the registries are relative to it. */
export const ROOT_DIR = path.resolve(__dirname, '..');

/** Context key that turns bundling off even for a stack being deployed (`-c vap:skipBundling=true`). */
export const SKIP_BUNDLING_CONTEXT = 'vap:skipBundling';

/** The bundle name of the `$default` route's function. */
export const FALLBACK_BUNDLE = 'fallback';

export interface VoiceAgentPlatformStackProps extends StackProps {
  /** The route registry; the default is shared/http/registry.ts (tests pass their own). */
  operations?: Operation[];
  /** Entry file of the `$default` route's function. */
  fallbackEntry?: string;
  /** The job registry; the default is shared/jobs/registry.ts. */
  jobs?: JobDefinition[];
  /** Reported by GET /health (APP_VERSION); default the package version. */
  appVersion?: string;
  /** API_THROTTLE_RATE, API_THROTTLE_BURST: throttling of every route without its own (DEFAULT_THROTTLE), on both APIs. */
  throttle?: ApiThrottle;
  /** RATE_LIMIT_PER_MINUTE: requests per minute per API key unless the organization sets its own. */
  rateLimitPerMinute?: number;
  /** CONCURRENCY_CEILING: the operator's ceiling on an organization's simultaneous live calls (default 20). */
  concurrencyCeiling?: number;
  /** API_KEY_CACHE_SECONDS: how long a function keeps an API key lookup in memory. */
  apiKeyCacheSeconds?: number;
  /** LOG_RETENTION_DAYS: retention of every function's, the APIs' and the voice runtime's logs; default one month. */
  logRetention?: logs.RetentionDays;
  /**
   * SOURCE_MAPS: run every function with NODE_OPTIONS=--enable-source-maps, so stack traces in
   * the logs name source lines. Off by default: Node then reads each loaded file's map at cold
   * start, which `npm run bench` (b) measures at 10–30 ms (15–35 % of the floor). The maps are in
   * every asset either way, beside the code (cdk.out), to decode a minified trace by hand.
   */
  sourceMaps?: boolean;
  /** Subscribed to the alarm topic when given. */
  alarmEmail?: string;
  /** The carrier: provider (default `simulated`) and an existing Twilio credentials secret by name (default: one is created). */
  telephony?: TelephonyProps;
  /** Post-call analysis: provider (default `local`), base URL, default model and, for `openai`, an existing API-key secret by name (default: one is created). */
  analysis?: AnalysisProps;
  /** The conversation model: provider (default `local`), base URL, default model, timeout and, for `openai`, an existing API-key secret by name (default: one is created). */
  llm?: LlmProps;
  /**
   * PUBLIC_BASE_URL: the API's public base URL (a custom domain), which the carrier's callback URLs
   * and their signature checks use; the generated API URL cannot be passed to the functions
   * behind it without a dependency cycle. Required for TELEPHONY_PROVIDER twilio.
   */
  publicBaseUrl?: string;
  /**
   * VOICE_RUNTIME_URL: where Twilio streams answered calls' media (`wss://…`). Default: the voice
   * runtime this stack deploys (`wss://<CloudFront domain>/stream`, or the operator's domain).
   * Given, no runtime is deployed here (one runs elsewhere).
   */
  voiceRuntimeUrl?: string;
  /** VOICE_DOMAIN_NAME, VOICE_CERTIFICATE_ARN: the operator's domain and ACM certificate (same region) for the voice runtime; default CloudFront's domain. */
  voiceDomainName?: string;
  voiceCertificateArn?: string;
  /** VOICE_MIN_TASKS: voice runtime tasks always running (and the first deployment's count), spread over two zones; default 2. */
  voiceMinTasks?: number;
  /** VOICE_MAX_TASKS: the most tasks scaling on open calls may run; default 10. */
  voiceMaxTasks?: number;
  /** WIDGET_CONCURRENCY, MODEL_CONCURRENCY: reserved-concurrency caps per function (api-area.ts `reservedConcurrencyOf`); `off` for none. */
  reservedConcurrency?: ReservedConcurrency;
  /** REALTIME_BASE_URL of the voice runtime; default the runtime's (OpenAI). */
  realtimeBaseUrl?: string;
  /**
   * TRACES: OpenTelemetry traces from every function to X-Ray's OTLP endpoint in the stack's
   * region, signed with the function's role (shared/telemetry/xray-exporter.ts); the role's
   * xray:PutTraceSegments comes with active tracing (api-function.ts). Default off (docs/operations.md, "Traces").
   */
  traces?: boolean;
  /**
   * Where bundles are written; default `.build/bundles/<assembly>` in the repository, one folder per
   * cloud assembly directory, so two synths into different directories (`cdk synth -o …`) at once
   * never empty each other's bundles.
   */
  bundleDir?: string;
  /** The WebSocket routes (ConversationRelay); the default is shared/http/registry.ts `websocketRoutes`. None: no relay API. */
  websocketRoutes?: WebSocketRoute[];
}

/**
 * The whole platform in one deployable unit: table, bucket and keys, queues and schedules, the
 * HTTP API with one function per registry operation (grouped by area into nested stacks), and
 * alarms. Routes, functions and grants all come from the registries, never from a list here.
 */
export class VoiceAgentPlatformStack extends Stack {
  readonly data: Data;
  readonly storage: Storage;
  readonly telephony: Telephony;
  readonly analysis: Analysis;
  readonly llm: Llm;
  readonly tokens: TokenSigning;
  /** The voice runtime (absent when `voiceRuntimeUrl` names one elsewhere). */
  readonly voice?: VoiceRuntime;
  readonly monitoring: Monitoring;
  readonly jobs: Jobs;
  /** The ConversationRelay WebSocket API (absent when given no WebSocket routes). */
  readonly relay?: RelayApi;
  readonly api: Api;
  readonly fallback: ApiFunction;
  /** Area stacks by area (apiArea: the first path segment after /api/v1). */
  readonly areas = new Map<string, ApiArea>();
  /** How the functions got their code (bundled, or placeholders). */
  readonly code: CodeSource;

  constructor(scope: Construct, id: string, props: VoiceAgentPlatformStackProps = {}) {
    super(scope, id, props);
    const operations = props.operations ?? registryOperations;
    const fallbackEntry = props.fallbackEntry ?? registryFallbackEntry;
    const jobs = props.jobs ?? registryJobs;
    // A stack built from a test's own registry has no relay unless it is given WebSocket routes too.
    const wsRoutes = props.websocketRoutes ?? (props.operations || props.jobs ? [] : registryWebsocketRoutes);
    checkUnique(operations.map((op) => op.operationId), 'operation id');
    checkUnique(operations.map((op) => `${op.method} ${op.path}`), 'route');
    checkUnique(jobs.map((job) => job.name), 'job name');

    this.code = this.codeFor(
      [
        ...operations.map((op) => ({ name: operationBundleName(op), entry: op.entry, files: op.bundleFiles })),
        { name: FALLBACK_BUNDLE, entry: fallbackEntry },
        ...jobs.map((job) => ({ name: jobBundleName(job), entry: job.entry })),
        ...wsRoutes.map((route) => ({ name: relayBundleName(route), entry: route.entry })),
      ],
      props.bundleDir ?? path.join(ROOT_DIR, '.build', 'bundles', createHash('sha256').update(Stage.of(this)?.outdir ?? 'cdk.out').digest('hex').slice(0, 12)),
    );

    this.data = new Data(this, 'Data');
    this.storage = new Storage(this, 'Storage');
    this.monitoring = new Monitoring(this, 'Monitoring', { alarmEmail: props.alarmEmail });

    // What every function reads from the environment (shared/config.ts). Names are not secrets
    // and grant nothing: permissions come from each function's Access only.
    const environment: Record<string, string> = {
      TABLE_NAME: this.data.table.tableName,
      BUCKET_NAME: this.storage.bucket.bucketName,
      APP_VERSION: props.appVersion ?? packageVersion(),
      RATE_LIMIT_PER_MINUTE: String(props.rateLimitPerMinute ?? 1200),
      CONCURRENCY_CEILING: String(props.concurrencyCeiling ?? 20),
      API_KEY_CACHE_SECONDS: String(props.apiKeyCacheSeconds ?? 10),
      ...(props.publicBaseUrl ? { PUBLIC_BASE_URL: props.publicBaseUrl } : {}),
      VOICE_RUNTIME_URL: props.voiceRuntimeUrl ?? (this.voice = new VoiceRuntime(this, 'Voice', { domainName: props.voiceDomainName, certificateArn: props.voiceCertificateArn })).url,
      ...(props.sourceMaps ? { NODE_OPTIONS: '--enable-source-maps' } : {}),
      // The standard OpenTelemetry settings; X-Ray's OTLP endpoint rather than the ADOT layer (docs/operations.md, "Traces").
      ...(props.traces
        ? { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `https://xray.${Stack.of(this).region}.amazonaws.com/v1/traces`, OTEL_SERVICE_NAME: 'voice-agent-platform' }
        : {}),
    };
    this.telephony = new Telephony(this, 'Telephony', props.telephony);
    this.analysis = new Analysis(this, 'Analysis', props.analysis);
    this.llm = new Llm(this, 'Llm', props.llm);
    this.tokens = new TokenSigning(this, 'TokenSigning');
    const targets = {
      table: this.data.table,
      bucket: this.storage.bucket,
      secretsKey: this.storage.secretsKey,
      telephony: { provider: this.telephony.provider, secret: this.telephony.secret },
      analysis: this.analysis.target,
      llm: this.llm.target,
      tokens: this.tokens.secret,
    };

    this.jobs = new Jobs(this, 'Jobs', {
      jobs,
      code: this.code,
      environment,
      targets,
      monitoring: this.monitoring,
      logRetention: props.logRetention,
    });

    // ConversationRelay's WebSocket API; the HTTP functions (the telephony callbacks' TwiML) learn its URL as RELAY_URL.
    if (wsRoutes.length) {
      this.relay = new RelayApi(this, 'Relay', { routes: wsRoutes, code: this.code, environment, targets: { ...targets, queues: this.jobs.queues }, monitoring: this.monitoring, logRetention: props.logRetention });
      environment.RELAY_URL = this.relay.url;
      new CfnOutput(this, 'RelayUrl', { value: this.relay.url, description: 'ConversationRelay WebSocket URL (RELAY_URL)' });
    }

    this.voice?.addService({
      minTasks: props.voiceMinTasks,
      maxTasks: props.voiceMaxTasks,
      secretsKey: this.storage.secretsKey,
      llm: this.llm.target,
      // Tests and `cdk ls` build no image (as they bundle no function): a public image stands in.
      image: !this.code.bundled ? ecs.ContainerImage.fromRegistry('public.ecr.aws/docker/library/node:22-slim') : undefined,
      environment,
      table: this.data.table,
      bucket: this.storage.bucket,
      bucketPrefixes: objectKeys.grantPatterns,
      tokens: this.tokens.secret,
      telephony: { provider: this.telephony.provider, secret: this.telephony.secret },
      queues: this.jobs.queues,
      // Those a call's end sends to (a test's own job registry may have none of them).
      queueNames: ['call-events', 'call-analysis', 'event-fanout', 'campaign-dispatch', 'call-place'].filter((name) => this.jobs.queues.has(name)),
      realtimeBaseUrl: props.realtimeBaseUrl,
      monitoring: this.monitoring,
      logRetention: props.logRetention,
    });

    this.fallback = new ApiFunction(this, 'FallbackFunction', {
      code: this.code.code(FALLBACK_BUNDLE),
      description: 'Answers requests no route matches: 404, or 405 when the path exists with another method',
      environment,
      logRetention: props.logRetention,
    });
    this.monitoring.alarmOnErrors(this.fallback);

    this.api = new Api(this, 'Api', { fallback: this.fallback, throttle: props.throttle, logRetention: props.logRetention });
    this.monitoring.alarmOnServerErrors(this.api.httpApi);
    // Only when some operation streams (a REST API without methods cannot be deployed).
    const streamingApi = operations.some((o) => o.streams) ? new StreamingApi(this, 'StreamingApi', { throttle: props.throttle, logRetention: props.logRetention }) : undefined;
    // The widget's config tells the script where its turns stream (docs/api.md, "Streaming a turn").
    if (streamingApi) environment.STREAMING_API_URL = streamingApi.functionsUrl;

    for (const [area, areaOperations] of groupBy(operations, apiArea)) {
      const areaId = `${pascalCase(area)}Api`;
      this.areas.set(
        area,
        new ApiArea(this, areaId, {
          description: `Voice Agent Platform API: /api/v1/${area} operations`,
          operations: areaOperations,
          api: this.api,
          streamingApi,
          code: this.code,
          environment,
          targets: { ...targets, queues: this.jobs.queues },
          monitoring: this.monitoring,
          logRetention: props.logRetention,
          reservedConcurrency: props.reservedConcurrency,
        }),
      );
    }

    // Alarms on the platform as a whole, and its dashboard (docs/operations.md, "Alarms and what to do").
    this.monitoring.alarmOnThrottles('Api', 'The API', this.api.accessLogs);
    this.monitoring.alarmOnLatency(this.api.httpApi);
    if (streamingApi) {
      this.monitoring.alarmOnThrottles('StreamingApi', 'The streaming API', streamingApi.accessLogs);
      this.monitoring.alarmOnStreamingServerErrors(streamingApi.restApi);
    }
    this.monitoring.alarmOnTableThrottles(this.data.table);
    this.monitoring.alarmOnModelErrors();
    this.monitoring.addDashboard({ api: this.api.httpApi, streamingApi: streamingApi?.restApi, table: this.data.table, queues: this.jobs.queues, voice: this.voice?.dashboardMetrics() });

    new CfnOutput(this, 'ApiUrl', { value: this.api.url, description: 'Base URL of the API' });
    if (streamingApi) new CfnOutput(this, 'StreamingApiUrl', { value: streamingApi.url, description: 'Base URL where streams arrive as produced (Accept: text/event-stream turns, the widget\'s turns) and every /api/v1/openai/v1 route (an OpenAI SDK\'s baseURL: this + /api/v1/openai/v1): same paths and key' });
    new CfnOutput(this, 'TableName', { value: this.data.table.tableName });
    new CfnOutput(this, 'BucketName', { value: this.storage.bucket.bucketName });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn });
  }

  /**
   * Bundles only when this stack is being deployed or synthesized for real: the CLI lists the
   * stacks to bundle in the `aws:cdk:bundling-stacks` context (none for `cdk ls`; tests pass
   * none), and `vap:skipBundling` turns it off by hand.
   */
  private codeFor(entries: BundleEntry[], outDir: string): CodeSource {
    const skip = [true, 'true'].includes(this.node.tryGetContext(SKIP_BUNDLING_CONTEXT));
    if (skip || !this.bundlingRequired) return placeholderCode();
    const bundled = bundledCode(entries, { rootDir: ROOT_DIR, outDir });
    const kb = (sizes: Map<string, number>) => ([...sizes.values()].reduce((sum, bytes) => sum + bytes, 0) / 1024).toFixed(0);
    process.stderr.write(
      `Bundled ${entries.length} functions in ${bundled.result.millis} ms (${kb(bundled.result.totalSizes)} KB of code in all, ` +
        `${kb(bundled.result.sizes)} KB of it loaded at start) into ${path.relative(ROOT_DIR, outDir)}\n`,
    );
    return bundled;
  }
}

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return groups;
}

function checkUnique(values: string[], what: string): void {
  const seen = new Set<string>();
  for (const value of values) {
    if (seen.has(value)) throw new Error(`Duplicate ${what} in the registries: ${value}`);
    seen.add(value);
  }
}

function packageVersion(): string {
  return (JSON.parse(readFileSync(path.join(ROOT_DIR, 'package.json'), 'utf8')) as { version: string }).version;
}

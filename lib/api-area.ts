import { NestedStack, type NestedStackProps } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { Operation } from '../shared/http/operation';
import { ApiFunction, type AccessTargets } from './api-function';
import type { Api } from './api';
import { servedByStreamingApi, STREAMING_TIMEOUT, type StreamingApi } from './streaming-api';
import type { CodeSource } from './bundle';
import type { Monitoring } from './monitoring';
import { pascalCase } from './names';

export interface ApiAreaProps extends NestedStackProps {
  /** The operations of one area (apiArea: one first path segment). */
  operations: Operation[];
  api: Api;
  /** Where the operations that stream (`streams: true`) are served too. */
  streamingApi?: StreamingApi;
  code: CodeSource;
  environment: Record<string, string>;
  targets: AccessTargets;
  monitoring: Monitoring;
  logRetention?: logs.RetentionDays;
  reservedConcurrency?: ReservedConcurrency;
}

/** Reserved-concurrency caps per function (WIDGET_CONCURRENCY, MODEL_CONCURRENCY); `off`: none. */
export interface ReservedConcurrency {
  widget?: number | 'off';
  model?: number | 'off';
}

/**
 * The defaults: 20 instances each. Nine model-calling and seven widget functions (with their
 * streamed twins) hold back 320 of the account's concurrency (1,000 by default; Lambda keeps 100
 * unreserved), so no burst of them can take the rest of the platform's functions down with it.
 */
export const DEFAULT_RESERVED_CONCURRENCY = { widget: 20, model: 20 } as const;

/**
 * The cap of an operation's function, or none. Widget functions that do work (the public POSTs:
 * a chat started, a turn, a call started; anyone on the internet can send them, at no cost to
 * themselves) get `widget`; any other that calls a model (a turn, a completion, a re-analysis)
 * gets `model`, so a burst spends neither the account's concurrency nor the model budget
 * without bound. Reads, preflights and the script are cheap and stay uncapped.
 */
export function reservedConcurrencyOf(operation: Operation, caps: ReservedConcurrency = {}): number | undefined {
  const cap = (value: number | 'off' | undefined, fallback: number) => (value === 'off' ? undefined : value ?? fallback);
  if (!operation.auth && operation.method === 'POST' && operation.path.startsWith('/api/v1/widget/')) return cap(caps.widget, DEFAULT_RESERVED_CONCURRENCY.widget);
  if (operation.access.llm || operation.access.analysis) return cap(caps.model, DEFAULT_RESERVED_CONCURRENCY.model);
  return undefined;
}

/**
 * The functions and routes of one area of the API (agents, campaigns, …) in a nested stack.
 *
 * Each operation costs eight CloudFormation resources (function, role, policy, log group,
 * integration, route, permission, alarm) and a stack holds at most 500: the full API (about 85
 * operations) would not fit in one. Grouping by the first path segment (not by the tag, which is
 * documentation and may be renamed) keeps every operation in the same stack as the registry grows
 * and as tags and summaries change, so no route ever has to move between stacks (which
 * CloudFormation could not do in one deployment: the new route would clash with the old one).
 * Construct ids come from the operation id alone, so a function's logical id changes only when
 * its operation id does (docs/operations.md says what each rename does).
 */
export class ApiArea extends NestedStack {
  /** Functions by operation id. */
  readonly functions = new Map<string, ApiFunction>();

  constructor(scope: Construct, id: string, props: ApiAreaProps) {
    super(scope, id, props);
    for (const operation of props.operations) {
      const fn = new ApiFunction(this, `${pascalCase(operation.operationId)}Function`, {
        code: props.code.code(operationBundleName(operation)),
        description: `${operation.method} ${operation.path}: ${operation.summary}`,
        environment: props.environment,
        memoryMb: operation.memoryMb,
        timeoutSeconds: operation.timeoutSeconds,
        logRetention: props.logRetention,
        reservedConcurrency: reservedConcurrencyOf(operation, props.reservedConcurrency),
      });
      fn.applyAccess(operation.access, props.targets, `Operation ${operation.operationId}`);
      props.api.addOperation(this, operation, fn);
      props.monitoring.alarmOnErrors(fn);
      this.functions.set(operation.operationId, fn);
      // Every OpenAI-compatible route goes there too, streaming or not: an SDK takes one base URL.
      if (servedByStreamingApi(operation) && props.streamingApi) {
        // The same bundle, its `streamHandler` export: Lambda response streaming for the REST API.
        const streamFn = new ApiFunction(this, `${pascalCase(operation.operationId)}StreamFunction`, {
          code: props.code.code(operationBundleName(operation)),
          description: `${operation.method} ${operation.path} (streamed): ${operation.summary}`,
          environment: props.environment,
          memoryMb: operation.memoryMb,
          // Behind the streaming REST API, not the HTTP API's 30 s: the same limit as its integration.
          timeoutSeconds: STREAMING_TIMEOUT.toSeconds(),
          logRetention: props.logRetention,
          handlerExport: 'streamHandler',
          reservedConcurrency: reservedConcurrencyOf(operation, props.reservedConcurrency),
        });
        streamFn.applyAccess(operation.access, props.targets, `Operation ${operation.operationId} (streamed)`);
        props.streamingApi.addOperation(operation, streamFn);
        props.monitoring.alarmOnErrors(streamFn);
      }
    }
  }
}

/** The area of an operation: the first path segment after /api/v1 (`/api/v1/phone-numbers/{id}` → `phone-numbers`). */
export function apiArea(operation: Operation): string {
  const segment = operation.path.replace(/^\/api\/v\d+\//, '').split('/')[0];
  if (!segment) throw new Error(`Operation ${operation.operationId}: path ${operation.path} has no segment after the base path.`);
  return segment;
}

/** The bundle name of an operation's function. */
export function operationBundleName(operation: Operation): string {
  return operation.operationId;
}

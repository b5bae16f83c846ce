import { NestedStack, type NestedStackProps } from 'aws-cdk-lib';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { Operation } from '../shared/http/operation';
import { ApiFunction, type AccessTargets } from './api-function';
import type { Api } from './api';
import { servedByStreamingApi, type StreamingApi } from './streaming-api';
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
          timeoutSeconds: operation.timeoutSeconds,
          logRetention: props.logRetention,
          handlerExport: 'streamHandler',
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

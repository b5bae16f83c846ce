import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';

export interface LambdaContextOptions {
  functionName: string;
  /** The function's timeout; `getRemainingTimeInMillis` counts down from it. */
  timeoutMs: number;
  memoryMb?: number;
  awsRequestId?: string;
  now?: () => number;
}

/** A Lambda-like context for handlers run in process: same fields, local values. */
export function createLambdaContext(options: LambdaContextOptions): Context {
  const now = options.now ?? Date.now;
  const deadline = now() + options.timeoutMs;
  const name = options.functionName;
  const fail = (): never => {
    throw new Error('done/fail/succeed are not supported by the local runtime: return or throw instead.');
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: name,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${name}`,
    memoryLimitInMB: String(options.memoryMb ?? 1024),
    awsRequestId: options.awsRequestId ?? randomUUID(),
    logGroupName: `/aws/lambda/${name}`,
    logStreamName: `local/${name}`,
    getRemainingTimeInMillis: () => Math.max(0, deadline - now()),
    done: fail,
    fail,
    succeed: fail,
  };
}

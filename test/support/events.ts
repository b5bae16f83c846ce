import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';

/** An API Gateway HTTP API (v2) event with only what a test cares about set. */
export function apiEvent(over: {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: unknown;
  pathParameters?: Record<string, string>;
  query?: Record<string, string>;
} = {}): APIGatewayProxyEventV2 {
  const method = over.method ?? 'GET';
  const path = over.path ?? '/api/v1/test';
  return {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: new URLSearchParams(over.query ?? {}).toString(),
    headers: over.headers ?? {},
    queryStringParameters: over.query,
    pathParameters: over.pathParameters,
    body: over.body === undefined ? undefined : typeof over.body === 'string' ? over.body : JSON.stringify(over.body),
    isBase64Encoded: false,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'localhost',
      requestId: 'req-test-1',
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'jest' },
    },
  } as APIGatewayProxyEventV2;
}

export const lambdaContext = { awsRequestId: 'ctx-1', functionName: 'test', getRemainingTimeInMillis: () => 10_000 } as unknown as Context;

/** Parses a handler's JSON answer. */
export function parsed(res: unknown): { status: number; headers: Record<string, string>; body: any } {
  const r = res as { statusCode: number; headers?: Record<string, string>; body?: string };
  return { status: r.statusCode, headers: r.headers ?? {}, body: r.body ? JSON.parse(r.body) : undefined };
}

import type { APIGatewayProxyEventV2 } from 'aws-lambda';

/**
 * Case-insensitive header read (API Gateway v2 lowercases, tests may not). Here, below HTTP,
 * because areas that check a request themselves (the carrier's signature, a widget's origin)
 * read headers too; shared/http/context.ts re-exports it for the middlewares and entry files.
 */
export function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  const headers = event.headers ?? {};
  const lower = name.toLowerCase();
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

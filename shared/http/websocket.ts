import type { APIGatewayProxyResultV2, APIGatewayProxyWebsocketEventV2, Context } from 'aws-lambda';
import type { Access } from '../access/declaration';
import { logger, logsWritten } from '../logger';
import { afterInvocation } from '../telemetry/jobs';
import { flushMetrics } from '../telemetry/metrics';
import { startTracing } from '../telemetry/tracing';

/**
 * The WebSocket route kind of the route registry: an API Gateway WebSocket API route (`$connect`,
 * `$default`, `$disconnect`) and the Lambda function behind it. The CDK stack (lib/relay.ts) makes
 * one function per route with least-privilege grants from `access`, and the local runtime serves
 * the same handlers on a WebSocket path (shared/local/relay-server.ts), as for HTTP operations.
 */
export interface WebSocketRoute {
  kind: 'websocket';
  /** The WebSocket API's route key. */
  routeKey: '$connect' | '$default' | '$disconnect';
  /** A unique name (the function's bundle directory and construct id). */
  name: string;
  /** Entry file, relative to the repository root. */
  entry: string;
  description: string;
  access: Access;
  timeoutSeconds?: number;
  memoryMb?: number;
}

/** The `$connect` event carries the query string; API Gateway's WebSocket event type leaves it out. */
export type WebSocketEvent = APIGatewayProxyWebsocketEventV2 & {
  queryStringParameters?: Record<string, string | undefined>;
  headers?: Record<string, string | undefined>;
};

/** What a route's function is given. */
export interface WebSocketInput {
  connectionId: string;
  body: string | undefined;
  query: Record<string, string | undefined>;
  event: WebSocketEvent;
}

/**
 * Wraps a route's function: the connection id and body taken from the event, a `statusCode`
 * answer (`$connect` refuses the connection with any status but 200; for other routes it is only
 * logged by API Gateway), and an unexpected error logged with its cause and answered 500, never thrown.
 */
export function websocket(route: WebSocketRoute, fn: (input: WebSocketInput) => Promise<{ statusCode: number; body?: string } | void>) {
  return async (event: WebSocketEvent, _context?: Context): Promise<APIGatewayProxyResultV2> => {
    const connectionId = event.requestContext.connectionId;
    const body = event.body && event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body;
    // Tracing starts with the function's first message when the settings ask for it (the turns' spans: relay/turn-taking.ts).
    await startTracing();
    try {
      const answer = await fn({ connectionId, body, query: event.queryStringParameters ?? {}, event });
      return answer ?? { statusCode: 200 };
    } catch (err) {
      logger.error('A relay route failed', { route: route.routeKey, connection_id: connectionId, error: err as Error });
      return { statusCode: 500 };
    } finally {
      // A real Lambda is frozen once it answers: its metrics and spans leave first.
      await flushMetrics();
      await afterInvocation();
      await logsWritten();
    }
  };
}

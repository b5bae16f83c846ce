import type { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';
import { logger } from '../logger';

/**
 * Sends to a ConversationRelay connection. Deployed: the API Gateway Management API
 * (`PostToConnection`, `DeleteConnection`) of the relay's WebSocket API, at RELAY_CALLBACK_URL
 * (`https://<api id>.execute-api.<region>.amazonaws.com/<stage>`, set by the stack). Locally: the
 * local runtime installs its own sockets (shared/local/relay-server.ts), which fail as the
 * Management API does (`GoneException` 410, `LimitExceededException` 429).
 */
export interface RelayConnections {
  /** Posts one message; throws as `PostToConnection` does (an error named `GoneException`, `LimitExceededException`, …). */
  post(connectionId: string, data: string): Promise<void>;
  /** Closes the connection (the platform's side of a hang-up). */
  close(connectionId: string): Promise<void>;
}

const LOCAL = Symbol.for('vap.localRelayConnections');
type Holder = { [LOCAL]?: RelayConnections };

/** The local runtime's sockets (undefined: the Management API). */
export function installLocalRelayConnections(port: RelayConnections | undefined): void {
  (globalThis as Holder)[LOCAL] = port;
}

let client: ApiGatewayManagementApiClient | undefined;
let sdk: typeof import('@aws-sdk/client-apigatewaymanagementapi') | undefined;

async function managementApi() {
  const endpoint = process.env.RELAY_CALLBACK_URL;
  if (!endpoint) throw new Error('RELAY_CALLBACK_URL must be set to answer ConversationRelay connections');
  sdk ??= await import('@aws-sdk/client-apigatewaymanagementapi');
  // Throttling is retried by sendToRelay (bounded, inside the turn's budget), not by the SDK as well.
  client ??= new sdk.ApiGatewayManagementApiClient({ endpoint, maxAttempts: 1 });
  return { client, sdk };
}

const named = (err: unknown, name: string) => (err as { name?: string })?.name === name;

const managementConnections: RelayConnections = {
  async post(connectionId, data) {
    const { client: c, sdk: s } = await managementApi();
    await c.send(new s.PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(data) }));
  },
  async close(connectionId) {
    const { client: c, sdk: s } = await managementApi();
    await c.send(new s.DeleteConnectionCommand({ ConnectionId: connectionId })).catch((err: unknown) => {
      if (!named(err, 'GoneException')) throw err;
    });
  },
};

/** The connections port of this process. */
export function relayConnections(): RelayConnections {
  return (globalThis as Holder)[LOCAL] ?? managementConnections;
}

/** What one send came to: delivered, the connection is gone (410), or it failed otherwise (logged). */
export type SendOutcome = 'sent' | 'gone' | 'failed';

/** Waits between attempts of a throttled send (429): about 0.75 s in all, well inside a turn. */
export const RELAY_SEND_BACKOFF_MS = [25, 50, 100, 200, 400];

/**
 * Sends one message and never throws: 410 `GoneException` answers `gone` (the session is over), 429
 * `LimitExceededException` is tried again after RELAY_SEND_BACKOFF_MS, any other failure (and a
 * throttle that outlasts the backoff) is logged and answers `failed`.
 */
export async function sendToRelay(connectionId: string, message: unknown, wait: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms))): Promise<SendOutcome> {
  const data = JSON.stringify(message);
  for (let attempt = 0; ; attempt++) {
    try {
      await relayConnections().post(connectionId, data);
      return 'sent';
    } catch (err) {
      if (named(err, 'GoneException')) return 'gone';
      if (named(err, 'LimitExceededException') && attempt < RELAY_SEND_BACKOFF_MS.length) {
        await wait(RELAY_SEND_BACKOFF_MS[attempt]!);
        continue;
      }
      logger.warn('A message to a ConversationRelay connection failed', { connection_id: connectionId, error: err as Error });
      return 'failed';
    }
  }
}

import type { ApiGatewayManagementApiClient } from '@aws-sdk/client-apigatewaymanagementapi';

/**
 * Sends to a ConversationRelay connection. Deployed: the API Gateway Management API
 * (`PostToConnection`, `DeleteConnection`) of the relay's WebSocket API, at RELAY_CALLBACK_URL
 * (`https://<api id>.execute-api.<region>.amazonaws.com/<stage>`, set by the stack). Locally: the
 * local runtime installs its own sockets (shared/local/relay-server.ts).
 */
export interface RelayConnections {
  /** Sends one JSON message; false when the connection is gone (410 Gone). */
  send(connectionId: string, message: unknown): Promise<boolean>;
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
  client ??= new sdk.ApiGatewayManagementApiClient({ endpoint });
  return { client, sdk };
}

const gone = (err: unknown) => (err as { name?: string })?.name === 'GoneException';

const managementConnections: RelayConnections = {
  async send(connectionId, message) {
    const { client: c, sdk: s } = await managementApi();
    try {
      await c.send(new s.PostToConnectionCommand({ ConnectionId: connectionId, Data: Buffer.from(JSON.stringify(message)) }));
      return true;
    } catch (err) {
      if (gone(err)) return false;
      throw err;
    }
  },
  async close(connectionId) {
    const { client: c, sdk: s } = await managementApi();
    await c.send(new s.DeleteConnectionCommand({ ConnectionId: connectionId })).catch((err: unknown) => {
      if (!gone(err)) throw err;
    });
  },
};

/** The connections port of this process. */
export function relayConnections(): RelayConnections {
  return (globalThis as Holder)[LOCAL] ?? managementConnections;
}

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { installLocalRelayConnections } from '../adapters/relay-connections';
import { runAs } from '../access/enforce';
import { websocketRoutes } from '../http/registry';
import type { WebSocketEvent, WebSocketRoute } from '../http/websocket';
import type { HandlerLoader } from './handler-loader';
import { createLambdaContext } from './lambda-context';

/** The local runtime's path for ConversationRelay (RELAY_URL is ws://<host>:<port>/relay). */
export const RELAY_PATH = '/relay';

type WsHandler = (event: WebSocketEvent, context: unknown) => Promise<{ statusCode?: number; body?: string } | undefined>;

export interface LocalRelay {
  /** Open connections by connection id. */
  sockets: Map<string, WebSocket>;
  /** Resolves when every message handler started so far has finished. */
  idle(): Promise<void>;
  /** Message handlers (`$default`) finished so far. */
  readonly handled: number;
  /** Resolves once `count` message handlers have finished (`handled`): one message's handling while another's still runs. */
  untilHandled(count: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the relay's WebSocket routes (the registry's `websocketRoutes`) on the local HTTP
 * server's upgrade to RELAY_PATH, as API Gateway's WebSocket API does: the `$connect` handler
 * decides whether the upgrade completes (any status but 200 refuses it with that status); each
 * message invokes `$default` at once, without waiting for the previous one (API Gateway does not
 * serialize a connection's messages either); the close invokes `$disconnect`. Replies go back
 * through the installed connections port (PostToConnection's local twin). Each handler runs within
 * its route's access declaration.
 */
export function attachRelay(server: Server, options: { loadHandler: HandlerLoader; log: (line: string) => void; routes?: WebSocketRoute[] }): LocalRelay {
  const routes = new Map((options.routes ?? websocketRoutes).map((r) => [r.routeKey, r]));
  const sockets = new Map<string, WebSocket>();
  const inFlight = new Set<Promise<unknown>>();
  let handled = 0;
  const handledWaiters = new Set<() => void>();
  const wss = new WebSocketServer({ noServer: true, maxPayload: 128 * 1024, perMessageDeflate: false });

  const invoke = async (routeKey: WebSocketRoute['routeKey'], connectionId: string, extra: Partial<WebSocketEvent>) => {
    const route = routes.get(routeKey);
    if (!route) return { statusCode: 200 };
    const event = {
      requestContext: { routeKey, eventType: routeKey === '$connect' ? 'CONNECT' : routeKey === '$disconnect' ? 'DISCONNECT' : 'MESSAGE', connectionId, requestId: randomUUID(), stage: 'local', domainName: 'localhost', apiId: 'local', requestTimeEpoch: Date.now() },
      isBase64Encoded: false,
      ...extra,
    } as unknown as WebSocketEvent;
    const handler = await options.loadHandler<WsHandler>(route.entry);
    const context = createLambdaContext({ functionName: route.name, timeoutMs: (route.timeoutSeconds ?? 10) * 1000, memoryMb: route.memoryMb });
    const run = runAs({ name: route.name, access: route.access }, () => handler(event, context));
    inFlight.add(run);
    try {
      return (await run) ?? { statusCode: 200 };
    } catch (err) {
      options.log(`relay ${routeKey} (${route.name}) failed [${connectionId}]: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      return { statusCode: 500 };
    } finally {
      inFlight.delete(run);
      if (routeKey === '$default') {
        handled++;
        for (const w of handledWaiters) w();
      }
    }
  };

  installLocalRelayConnections({
    async send(connectionId, message) {
      const socket = sockets.get(connectionId);
      if (!socket || socket.readyState !== socket.OPEN) return false;
      await new Promise<void>((resolve, reject) => socket.send(JSON.stringify(message), (err) => (err ? reject(err) : resolve())));
      return true;
    },
    async close(connectionId) {
      sockets.get(connectionId)?.close(1000);
    },
  });

  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://local');
    if (url.pathname !== RELAY_PATH) {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    const connectionId = randomUUID().replace(/-/g, '').slice(0, 16);
    const query = Object.fromEntries(url.searchParams);
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]));
    void invoke('$connect', connectionId, { queryStringParameters: query, headers }).then((answer) => {
      const status = answer.statusCode ?? 200;
      if (status !== 200) {
        socket.end(`HTTP/1.1 ${status} Refused\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        sockets.set(connectionId, ws);
        ws.on('message', (data) => void invoke('$default', connectionId, { body: data.toString('utf8') }));
        ws.on('close', () => {
          sockets.delete(connectionId);
          void invoke('$disconnect', connectionId, {});
        });
        ws.on('error', () => undefined);
      });
    });
  };
  server.on('upgrade', onUpgrade);

  return {
    sockets,
    get handled() {
      return handled;
    },
    untilHandled(count: number) {
      return new Promise<void>((resolve) => {
        const check = () => {
          if (handled < count) return;
          handledWaiters.delete(check);
          resolve();
        };
        handledWaiters.add(check);
        check();
      });
    },
    async idle() {
      while (inFlight.size) await Promise.allSettled([...inFlight]);
    },
    async close() {
      server.off('upgrade', onUpgrade);
      // Each socket's close runs `$disconnect` (the call's conversation written) before the runtime stops.
      const closing = [...sockets.values()].map((ws) => new Promise<void>((resolve) => (ws.readyState === ws.CLOSED ? resolve() : ws.once('close', () => resolve()))));
      for (const ws of sockets.values()) ws.terminate();
      await Promise.all(closing);
      await new Promise((r) => setImmediate(r));
      await this.idle();
      wss.close();
      installLocalRelayConnections(undefined);
    },
  };
}

import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { installLocalRelayConnections } from '../adapters/relay-connections';
import { clockMs } from '../clock';
import { runAs } from '../access/enforce';
import { websocketRoutes } from '../http/registry';
import type { WebSocketEvent, WebSocketRoute } from '../http/websocket';
import type { HandlerLoader } from './handler-loader';
import { createLambdaContext } from './lambda-context';

/** The local runtime's path for ConversationRelay (RELAY_URL is ws://<host>:<port>/relay). */
export const RELAY_PATH = '/relay';

type WsHandler = (event: WebSocketEvent, context: unknown) => Promise<{ statusCode?: number; body?: string } | undefined>;

/** API Gateway's WebSocket limits (AWS docs, API Gateway quotas), enforced by the local server. */
export interface RelayLimits {
  /** A connection lives at most this long (2 hours). */
  connectionMs: number;
  /** A connection nothing crossed for this long is closed (10 minutes). */
  idleMs: number;
  /** An integration (one route's function) has this long to answer (29 s); `$connect` past it is refused 504. */
  integrationMs: number;
}

export const API_GATEWAY_LIMITS: RelayLimits = { connectionMs: 2 * 60 * 60_000, idleMs: 10 * 60_000, integrationMs: 29_000 };

/** PostToConnection's failures (AWS docs): each is thrown as the SDK throws it, an error of that name. */
export type PostFailure = 410 | 429 | 500;
const POST_FAILURES: Record<PostFailure, string> = { 410: 'GoneException', 429: 'LimitExceededException', 500: 'InternalServerErrorException' };

/**
 * What a test makes the local WebSocket API do that API Gateway may do: answer a `PostToConnection`
 * with 410 or 429 (`failPost`: asked for each post, answering a failure or nothing), never invoke
 * `$disconnect` (it is best effort), and run its clocks (`limits`, read with the platform's clock).
 */
export interface RelayFaults {
  failPost: ((connectionId: string, message: Record<string, unknown>) => PostFailure | undefined) | undefined;
  /** Every `$disconnect` from now on is lost (never invoked) while true. */
  loseDisconnect: boolean;
  limits: RelayLimits;
  /** `$disconnect`s lost so far (connection ids). */
  readonly lost: string[];
}

export interface LocalRelay {
  /** The faults and limits a test sets (API Gateway's own by default). */
  faults: RelayFaults;
  /** Closes connections past API Gateway's limits (by the platform's clock); the server also does so every second. */
  enforceLimits(): void;
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
  const faults: RelayFaults = { failPost: undefined, loseDisconnect: false, limits: { ...API_GATEWAY_LIMITS }, lost: [] };
  const times = new Map<string, { openedMs: number; activeMs: number }>();
  const touch = (connectionId: string) => {
    const t = times.get(connectionId);
    if (t) t.activeMs = clockMs();
  };
  const enforceLimits = () => {
    const nowMs = clockMs();
    for (const [connectionId, t] of times) {
      const over = nowMs - t.openedMs >= faults.limits.connectionMs ? 'the 2-hour connection limit' : nowMs - t.activeMs >= faults.limits.idleMs ? 'the idle timeout' : undefined;
      if (!over) continue;
      options.log(`relay [${connectionId}] closed by API Gateway's ${over}`);
      times.delete(connectionId);
      sockets.get(connectionId)?.close(1001, 'Going away');
    }
  };
  const limitTimer = setInterval(enforceLimits, 1000);
  limitTimer.unref();

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
    let timer: NodeJS.Timeout | undefined;
    // API Gateway stops waiting for an integration after 29 s (the function may run on; its answer is lost).
    const late = new Promise<{ statusCode: number; body: string }>((resolve) => {
      timer = setTimeout(() => {
        options.log(`relay ${routeKey} (${route.name}) passed API Gateway's ${faults.limits.integrationMs} ms integration limit [${connectionId}]`);
        resolve({ statusCode: 504, body: 'Endpoint request timed out' });
      }, faults.limits.integrationMs);
      timer.unref();
    });
    try {
      return (await Promise.race([run, late])) ?? { statusCode: 200 };
    } catch (err) {
      options.log(`relay ${routeKey} (${route.name}) failed [${connectionId}]: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      return { statusCode: 500 };
    } finally {
      clearTimeout(timer);
      inFlight.delete(run);
      if (routeKey === '$default') {
        handled++;
        for (const w of handledWaiters) w();
      }
    }
  };

  const failure = (status: PostFailure, message: string) => Object.assign(new Error(message), { name: POST_FAILURES[status], $metadata: { httpStatusCode: status } });
  installLocalRelayConnections({
    async post(connectionId, data) {
      const injected = faults.failPost?.(connectionId, JSON.parse(data) as Record<string, unknown>);
      if (injected) throw failure(injected, `PostToConnection answered ${injected} (injected)`);
      const socket = sockets.get(connectionId);
      if (!socket || socket.readyState !== socket.OPEN) throw failure(410, `Connection ${connectionId} is gone`);
      touch(connectionId);
      await new Promise<void>((resolve, reject) => socket.send(data, (err) => (err ? reject(failure(410, err.message)) : resolve())));
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
        // API Gateway answers a refused upgrade with the `$connect` function's status and body.
        const body = Buffer.from(typeof answer.body === 'string' ? answer.body : '');
        socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Refused'}\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${body.length}\r\n\r\n${body.toString('utf8')}`);
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        sockets.set(connectionId, ws);
        times.set(connectionId, { openedMs: clockMs(), activeMs: clockMs() });
        ws.on('message', (data) => {
          touch(connectionId);
          void invoke('$default', connectionId, { body: data.toString('utf8') });
        });
        ws.on('close', () => {
          sockets.delete(connectionId);
          times.delete(connectionId);
          // API Gateway delivers `$disconnect` best effort: a test may lose it.
          if (faults.loseDisconnect) faults.lost.push(connectionId);
          else void invoke('$disconnect', connectionId, {});
        });
        ws.on('error', () => undefined);
      });
    });
  };
  server.on('upgrade', onUpgrade);

  return {
    sockets,
    faults,
    enforceLimits,
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
      clearInterval(limitTimer);
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

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * The Lambda Extensions API (2020-01-01) of one local execution environment, at the address its
 * AWS_LAMBDA_RUNTIME_API names (shared/local/stack/functions.ts). As Lambda's:
 * - `POST /2020-01-01/extension/register` (header `Lambda-Extension-Name`, body `{ events }`)
 *   answers 200 with `Lambda-Extension-Identifier` and `{ functionName, functionVersion, handler }`,
 *   only during init (403 once the runtime has asked for its first invocation); at most 10
 *   extensions; every extension here runs in the runtime's process (an internal extension: the
 *   local runtime has no layers), so registering for SHUTDOWN is refused (403);
 * - `GET /2020-01-01/extension/event/next` (header `Lambda-Extension-Identifier`, 403 without a
 *   registered one) blocks until the next event: `{ eventType: "INVOKE", deadlineMs, requestId,
 *   invokedFunctionArn, tracing }`;
 * - init ends when the runtime AND every registered extension have asked for their next event,
 *   and so does each invocation: the caller has its answer as soon as the runtime gives it, but
 *   the environment takes no other invocation until every extension has asked again, within the
 *   function's timeout (past it the environment is reset, as Lambda does);
 * - `POST /2020-01-01/extension/init/error` and `/exit/error` answer 202 and fail the environment.
 * Errors are `{ errorMessage, errorType }`; their types are this runtime's own words (Lambda documents the statuses, not the types).
 */

const PREFIX = '/2020-01-01/extension';
const MAX_EXTENSIONS = 10;

export interface InvokeEvent {
  requestId: string;
  deadlineMs: number;
  invokedFunctionArn: string;
}

interface Registered {
  name: string;
  /** Its pending `next` request, while it waits for an event. */
  waiting?: ServerResponse;
}

export class ExtensionsApi {
  private server?: Server;
  private readonly extensions = new Map<string, Registered>();
  private initDone = false;
  private settledWaiters: Array<() => void> = [];
  /** Set when an extension reported an init or exit error: the environment must not run on. */
  failure?: { errorType: string; errorMessage: string };

  constructor(private readonly fn: { name: string; handler: string }) {}

  /** Listens on a loopback port; resolves `host:port` (the environment's AWS_LAMBDA_RUNTIME_API). */
  async listen(): Promise<string> {
    const server = (this.server = createServer((req, res) => this.route(req, res)));
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', () => resolve()));
    return `127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  get count(): number {
    return this.extensions.size;
  }

  /** The runtime asked for its first invocation: registration is over. */
  endInit(): void {
    this.initDone = true;
  }

  /** Resolves once every registered extension waits in `next` (at once when none registered); rejects after `ms`. */
  allWaiting(ms: number, what: string): Promise<void> {
    if (this.everyWaiting()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.settledWaiters = this.settledWaiters.filter((w) => w !== done);
        const late = [...this.extensions.values()].filter((e) => !e.waiting).map((e) => e.name);
        reject(new Error(`${what}: extension ${late.join(', ')} did not ask for its next event within ${ms} ms`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      this.settledWaiters.push(done);
    });
  }

  /** Gives every extension (each waiting in `next`) the invocation's INVOKE event. */
  invoke(event: InvokeEvent): void {
    for (const extension of this.extensions.values()) {
      const res = extension.waiting;
      extension.waiting = undefined;
      if (!res) continue;
      const body = { eventType: 'INVOKE', deadlineMs: event.deadlineMs, requestId: event.requestId, invokedFunctionArn: event.invokedFunctionArn, tracing: { type: 'X-Amzn-Trace-Id', value: `Root=1-${Math.floor(Date.now() / 1000).toString(16)}-${randomUUID().replace(/-/g, '').slice(0, 24)};Sampled=0` } };
      send(res, 200, body, { 'Lambda-Extension-Event-Identifier': randomUUID() });
    }
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private everyWaiting(): boolean {
    for (const e of this.extensions.values()) if (!e.waiting) return false;
    return true;
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0];
      if (req.method === 'POST' && path === `${PREFIX}/register`) return this.register(req, res, body);
      if (req.method === 'GET' && path === `${PREFIX}/event/next`) return this.next(req, res);
      if (req.method === 'POST' && (path === `${PREFIX}/init/error` || path === `${PREFIX}/exit/error`)) return this.reportError(req, res, path.endsWith('init/error') ? 'Extension.InitError' : 'Extension.ExitError');
      send(res, 404, { errorMessage: `No such Runtime API path: ${req.method} ${path}`, errorType: 'InvalidRequest' });
    });
  }

  private register(req: IncomingMessage, res: ServerResponse, body: string): void {
    const name = header(req, 'lambda-extension-name');
    if (!name) return send(res, 400, { errorMessage: 'Lambda-Extension-Name header is required', errorType: 'InvalidRequest' });
    if (this.initDone) return send(res, 403, { errorMessage: `Extension ${name}: registration is only allowed during the Init phase`, errorType: 'Extension.RegistrationForbidden' });
    if (this.extensions.size >= MAX_EXTENSIONS) return send(res, 400, { errorMessage: `At most ${MAX_EXTENSIONS} extensions can register`, errorType: 'Extension.TooManyExtensions' });
    let events: unknown;
    try {
      events = body ? (JSON.parse(body) as { events?: unknown }).events : undefined;
    } catch {
      return send(res, 400, { errorMessage: 'The body is not JSON', errorType: 'InvalidRequest' });
    }
    if (events !== undefined && (!Array.isArray(events) || events.some((e) => e !== 'INVOKE' && e !== 'SHUTDOWN'))) {
      return send(res, 400, { errorMessage: 'events must be an array of INVOKE and SHUTDOWN', errorType: 'InvalidRequest' });
    }
    if ((events as string[] | undefined)?.includes('SHUTDOWN')) {
      return send(res, 403, { errorMessage: `Extension ${name}: an internal extension cannot register for the SHUTDOWN event`, errorType: 'Extension.ShutdownNotAllowed' });
    }
    const id = randomUUID();
    this.extensions.set(id, { name });
    send(res, 200, { functionName: this.fn.name, functionVersion: '$LATEST', handler: this.fn.handler }, { 'Lambda-Extension-Identifier': id });
  }

  private next(req: IncomingMessage, res: ServerResponse): void {
    const extension = this.extensions.get(header(req, 'lambda-extension-identifier') ?? '');
    if (!extension) return send(res, 403, { errorMessage: 'Unknown or missing Lambda-Extension-Identifier', errorType: 'Extension.UnknownExtensionIdentifier' });
    if (extension.waiting) return send(res, 403, { errorMessage: `Extension ${extension.name} is already waiting for its next event`, errorType: 'Extension.InvalidState' });
    extension.waiting = res;
    if (!this.everyWaiting()) return;
    const waiters = this.settledWaiters;
    this.settledWaiters = [];
    for (const w of waiters) w();
  }

  private reportError(req: IncomingMessage, res: ServerResponse, errorType: string): void {
    const extension = this.extensions.get(header(req, 'lambda-extension-identifier') ?? '');
    if (!extension) return send(res, 403, { errorMessage: 'Unknown or missing Lambda-Extension-Identifier', errorType: 'Extension.UnknownExtensionIdentifier' });
    this.failure = { errorType, errorMessage: `Extension ${extension.name} reported ${header(req, 'lambda-extension-function-error-type') ?? 'an error'}` };
    send(res, 202, { status: 'OK' });
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

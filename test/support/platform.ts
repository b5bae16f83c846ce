import { startPlatform, type Platform, type PlatformOptions } from '../../shared/local/platform';
import { ContractViolation, contract } from './contract';

export interface ApiReply<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON when the response is JSON, else the text. */
  body: T;
}

export interface ApiRequestOptions {
  /** API key; default the platform's first key; `null` sends none. */
  key?: string | null;
  /** An object is sent as JSON; a string or Buffer as is (set content-type yourself). */
  body?: unknown;
  headers?: Record<string, string>;
}

export interface TestPlatform {
  platform: Platform;
  url: string;
  /** The platform's first API key (its own organization). */
  key: string;
  /** Lines the platform logged (handler failures, dead letters). */
  logs: string[];
  /**
   * Every 5xx answer `api` received and every platform log line of a failure (a handler that
   * threw, a failed job batch, a dead letter, a failed scheduled job). `usePlatform` fails the
   * test file when one is left that no `expectFailures` pattern declared.
   */
  failures: string[];
  /**
   * Every response `api` received that docs/openapi.json does not describe (an undeclared status,
   * a body outside its schema; test/support/contract.ts). `api` throws on each, and `usePlatform`
   * fails the test file when any was seen (a mismatch inside a polling loop is not lost).
   */
  contractMismatches: string[];
  /** Patterns of failures caused on purpose; see `expectFailures`. */
  expectedFailures: RegExp[];
  /** Declares failures a test causes on purpose (a 503 from a provider that is down, a job made to fail…). */
  expectFailures(pattern: RegExp): void;
  api<T = any>(method: string, path: string, options?: ApiRequestOptions): Promise<ApiReply<T>>;
  stop(): Promise<void>;
}

/**
 * Starts the whole platform for acceptance tests: any free port, the table in memory, queue
 * delays and visibility timeouts 100 times shorter, and the scheduler slowed down so that
 * nothing fires on its own (call `platform.scheduler.runNow(name)` to tick). Options override.
 */
export async function startTestPlatform(options: PlatformOptions = {}): Promise<TestPlatform> {
  const logs: string[] = [];
  const failures: string[] = [];
  const expected: RegExp[] = [];
  const mismatches: string[] = [];
  const platform = await startPlatform({
    port: 0,
    inMemory: true,
    allowLoopbackFetch: true,
    tickSeconds: 24 * 3600,
    queueTimeScale: 0.01,
    ...options,
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'SILENT', ...options.env },
    log: (line) => {
      logs.push(line);
      if (FAILURE_LINE.test(line)) failures.push(line);
      options.log?.(line);
      if (process.env.VAP_TEST_LOG) console.error(line);
    },
  });
  const api = async <T>(method: string, path: string, request: ApiRequestOptions = {}): Promise<ApiReply<T>> => {
    const key = request.key === undefined ? platform.apiKeys[0] : request.key;
    const headers: Record<string, string> = { ...(key ? { 'x-api-key': key } : {}), ...request.headers };
    let body: string | Buffer | undefined;
    if (typeof request.body === 'string' || Buffer.isBuffer(request.body)) body = request.body;
    else if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await untracked(`${platform.url}${path}`, { method, headers, body });
    const text = await response.text();
    const isJson = /json/.test(response.headers.get('content-type') ?? '');
    if (response.status >= 500) {
      // The error code first, so a long message cannot push it out of the recorded line.
      const code = isJson ? /"code"\s*:\s*"([A-Z_]+)"/.exec(text)?.[1] : undefined;
      failures.push(`${method} ${path} answered ${response.status}: ${code ? `"code":"${code}" ` : ''}${text.slice(0, 300)}`);
    }
    const found = contract().check({ method, path, status: response.status, contentType: response.headers.get('content-type'), text });
    if (found.length) {
      mismatches.push(...found);
      throw new ContractViolation(`The response is not as docs/openapi.json says:\n${found.join('\n')}`);
    }
    return { status: response.status, headers: response.headers, body: (isJson && text ? JSON.parse(text) : text) as T };
  };
  const expectFailures = (pattern: RegExp) => void expected.push(pattern);
  const unwatch = watchFetch(platform.url, mismatches);
  const stop = async () => {
    unwatch();
    await platform.stop();
  };
  return { platform, url: platform.url, key: platform.apiKeys[0]!, logs, failures, contractMismatches: mismatches, expectedFailures: expected, expectFailures, api, stop };
}

/** The fetch of the process before any platform watched it (`api` checks its own answers). */
const untracked: typeof fetch = globalThis.fetch;

/**
 * Holds every other answer of this platform fetched in the test process against the document
 * too (a test's own `fetch`, the Twilio stand-in's callbacks, an SDK's requests): recorded, not
 * thrown (the caller may not be the test), and failed in `usePlatform`'s afterAll. An event
 * stream is checked for its status and media type only (its body never ends on its own).
 */
export function watchFetch(base: string, mismatches: string[]): () => void {
  const previous = globalThis.fetch;
  const watched: typeof fetch = async (input, init) => {
    const response = await previous(input, init);
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith(`${base}/`)) return response;
    const method = init?.method ?? (typeof input === 'object' && 'method' in input ? input.method : 'GET');
    const path = url.slice(base.length);
    const contentType = response.headers.get('content-type');
    const streaming = /event-stream/.test(contentType ?? '');
    const text = streaming ? '' : await response.clone().text();
    mismatches.push(...contract().check({ method, path, status: response.status, contentType, text, ...(streaming ? { bodyUnread: true } : {}) }));
    return response;
  };
  globalThis.fetch = watched;
  return () => {
    if (globalThis.fetch === watched) globalThis.fetch = previous;
  };
}

/** Log lines of the local runtime that report a failure (see shared/local/http-server.ts, queue-runner.ts, scheduler.ts). */
const FAILURE_LINE = /\) failed \[|local HTTP server error|: batch of \d+ failed|moved to the dead-letter list|scheduled job .* failed/;

/** The failures of a platform that no `expectFailures` pattern declared. */
export function unexpectedFailures(running: TestPlatform): string[] {
  return running.failures.filter((f) => !running.expectedFailures.some((p) => p.test(f)));
}

/** Fails when the platform answered a 5xx or logged a failure that the tests did not declare, or answered outside its document. */
export function expectNoUnexpected5xx(running: TestPlatform): void {
  if (running.contractMismatches.length) {
    throw new Error(`The platform answered outside docs/openapi.json:\n${[...new Set(running.contractMismatches)].join('\n')}`);
  }
  const unexpected = unexpectedFailures(running);
  if (unexpected.length) {
    throw new Error(`The platform failed in ways no test declared (use expectFailures(/pattern/) for failures caused on purpose):\n${unexpected.join('\n')}`);
  }
}

/**
 * The platform for one test file: started in `beforeAll`, stopped in `afterAll`.
 *
 *   const local = usePlatform();
 *   it('…', async () => { const res = await local().api('GET', '/api/v1/agents'); … });
 */
export function usePlatform(options: PlatformOptions = {}): () => TestPlatform {
  let running: TestPlatform | undefined;
  beforeAll(async () => {
    running = await startTestPlatform(options);
  }, 60_000);
  afterAll(async () => {
    await running?.stop();
    // After stopping, so a failure logged while the last requests settle is seen too.
    if (running) expectNoUnexpected5xx(running);
  });
  return () => {
    if (!running) throw new Error('The platform is not running: call usePlatform() at the top of the test file.');
    return running;
  };
}

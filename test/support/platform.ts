import { startPlatform, type Platform, type PlatformOptions } from '../../shared/local/platform';

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
    const response = await fetch(`${platform.url}${path}`, { method, headers, body });
    const text = await response.text();
    const isJson = /json/.test(response.headers.get('content-type') ?? '');
    return { status: response.status, headers: response.headers, body: (isJson && text ? JSON.parse(text) : text) as T };
  };
  return { platform, url: platform.url, key: platform.apiKeys[0]!, logs, api, stop: () => platform.stop() };
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
  });
  return () => {
    if (!running) throw new Error('The platform is not running: call usePlatform() at the top of the test file.');
    return running;
  };
}

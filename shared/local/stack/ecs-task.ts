import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';

/**
 * An ECS task of the synthesized stack, run locally: the container's command on the image's
 * bundle, with the task definition's `Environment`, its `Secrets` read the way the ECS agent reads
 * them (Secrets Manager, with the task *execution* role's credentials, and `arn:…:json-key:stage:id`
 * picking one key of a JSON secret: a secret without that key fails the task before it starts,
 * as ECS's ResourceInitializationError does), the task role's credentials for the application's
 * own AWS calls, and the container port mapped to a free local port (as Docker maps it).
 */

export interface ContainerSpec {
  name: string;
  environment: Record<string, string>;
  /** Name → ValueFrom (a secret ARN, optionally with `:json-key:version-stage:version-id`). */
  secrets: Record<string, string>;
  containerPort: number;
  healthPath: string;
}

/** Splits ECS's ValueFrom for Secrets Manager: the secret's ARN (7 parts) and the optional JSON key, stage and version. */
export function parseSecretValueFrom(valueFrom: string): { secretId: string; jsonKey?: string; versionStage?: string; versionId?: string } {
  const parts = valueFrom.split(':');
  if (parts[0] !== 'arn' || parts[2] !== 'secretsmanager' || parts.length < 7) return { secretId: valueFrom };
  const [jsonKey, versionStage, versionId] = parts.slice(7);
  return { secretId: parts.slice(0, 7).join(':'), jsonKey: jsonKey || undefined, versionStage: versionStage || undefined, versionId: versionId || undefined };
}

/** Reads every secret of a container as the ECS agent does; throws ECS's error for the first that fails. */
export async function readContainerSecrets(secrets: Record<string, string>, client: SecretsManagerClient): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, valueFrom] of Object.entries(secrets)) {
    const { secretId, jsonKey, versionStage, versionId } = parseSecretValueFrom(valueFrom);
    let value: string;
    try {
      const answer = await client.send(new GetSecretValueCommand({ SecretId: secretId, VersionStage: versionStage, VersionId: versionId }));
      value = answer.SecretString ?? '';
    } catch (err) {
      throw new Error(`ResourceInitializationError: unable to pull secrets or registry auth: unable to retrieve secret from asm: ${(err as Error).name}: ${(err as Error).message} (secret ${secretId}, for ${name})`);
    }
    if (jsonKey) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(value);
      } catch {
        parsed = undefined;
      }
      const field = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>)[jsonKey] : undefined;
      if (field === undefined) {
        throw new Error(`ResourceInitializationError: unable to pull secrets or registry auth: retrieved secret from Secrets Manager did not contain json key ${jsonKey} (secret ${secretId}, for ${name})`);
      }
      value = typeof field === 'string' ? field : JSON.stringify(field);
    }
    out[name] = value;
  }
  return out;
}

/** The container image's bundle of voice/main.ts, built with the Dockerfile's esbuild flags. */
export async function bundleVoiceRuntime(rootDir: string, outDir: string): Promise<string> {
  const { build } = await import('esbuild');
  mkdirSync(outDir, { recursive: true });
  const outfile = join(outDir, 'main.js');
  // The Dockerfile's stage 1: `esbuild voice/main.ts --bundle --platform=node --target=node22 --format=cjs
  // --main-fields=module,main --external:bufferutil --external:utf-8-validate --minify --sourcemap`.
  await build({
    absWorkingDir: rootDir,
    entryPoints: ['voice/main.ts'],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    mainFields: ['module', 'main'],
    external: ['bufferutil', 'utf-8-validate'],
    minify: true,
    sourcemap: true,
    outfile,
    logLevel: 'silent',
  });
  return outfile;
}

export interface RunningTask {
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the container's command (`node main.js`) and waits until its health check answers. */
export async function runTask(options: { bundle: string; container: ContainerSpec; env: Record<string, string>; port: number; log: (line: string) => void; startTimeoutMs?: number }): Promise<RunningTask> {
  const child = spawn(process.execPath, ['--enable-source-maps', options.bundle], {
    env: { PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', NODE_ENV: 'production', ...options.env, PORT: String(options.port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  for (const stream of [child.stdout!, child.stderr!]) createInterface({ input: stream }).on('line', (line) => options.log(line));
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  const deadline = Date.now() + (options.startTimeoutMs ?? 20_000);
  for (;;) {
    if (exited !== undefined) throw new Error(`Task ${options.container.name} exited (status ${exited}) before its health check passed`);
    try {
      const res = await fetch(`http://127.0.0.1:${options.port}${options.container.healthPath}`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`Task ${options.container.name}: health check ${options.container.healthPath} did not pass within ${(options.startTimeoutMs ?? 20_000) / 1000} s`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    port: options.port,
    child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (exited !== undefined) return resolve();
        const kill = setTimeout(() => child.kill('SIGKILL'), 3000);
        child.once('exit', () => {
          clearTimeout(kill);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

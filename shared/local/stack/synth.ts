import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';

/** The repository root (cdk.json, bin/app.ts). */
const ROOT = resolve(__dirname, '..', '..', '..');

/**
 * `cdk synth` exactly as docs/operations.md "Deploy" runs it before `cdk deploy` (the CLI, cdk.json,
 * bin/app.ts, bundling on, cdk-nag on), with the given deploy settings in its environment, into
 * `outDir`. Resolves with the time it took; rejects with the CLI's output when it fails.
 */
export async function synthesize(options: { outDir: string; env?: Record<string, string | undefined>; context?: Record<string, string> }): Promise<{ millis: number; output: string }> {
  const started = Date.now();
  const args = ['synth', '--quiet', '-o', options.outDir, ...Object.entries(options.context ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  const env: Record<string, string | undefined> = { ...process.env, ...options.env, CDK_DISABLE_VERSION_CHECK: 'true', CDK_CLI_NOTICES: 'false' };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const child = spawn(join(ROOT, 'node_modules', '.bin', 'cdk'), args, { cwd: ROOT, env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`cdk synth failed (exit ${code}):\n${output}`);
  return { millis: Date.now() - started, output };
}

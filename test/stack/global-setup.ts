import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { synthesize } from '../../shared/local/stack/synth';
import { CLEARED_SETTINGS, DEFAULT_ASSEMBLY_DIR, PRODUCTION_DEPLOY, PRODUCTION_SETTINGS } from './settings';

/**
 * The stack tier's one synth (issue 41): `cdk synth` with production's deploy settings into
 * .build/stack-ci.out, bundling on, exactly as before a deploy; every test file runs that
 * assembly. `STACK_ASSEMBLY=<dir>` runs an assembly already synthesized instead (while iterating).
 */
export default async function globalSetup(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  const given = process.env.STACK_ASSEMBLY;
  if (given) {
    const dir = resolve(given);
    if (!existsSync(join(dir, 'manifest.json'))) throw new Error(`STACK_ASSEMBLY=${given} is not a cloud assembly (no manifest.json)`);
    process.stdout.write(`\nstack tier: running the assembly in ${dir} (STACK_ASSEMBLY; not synthesized)\n`);
    process.env.STACK_CI_ASSEMBLY = dir;
    return;
  }
  process.stdout.write(`\nstack tier: cdk synth (production settings, bundling on) into ${DEFAULT_ASSEMBLY_DIR} …\n`);
  const env: Record<string, string | undefined> = { ...PRODUCTION_SETTINGS };
  for (const name of CLEARED_SETTINGS) env[name] = undefined;
  const { millis } = await synthesize({ outDir: DEFAULT_ASSEMBLY_DIR, env, context: PRODUCTION_DEPLOY.context });
  process.stdout.write(`stack tier: synthesized in ${(millis / 1000).toFixed(1)} s\n`);
  process.env.STACK_CI_ASSEMBLY = DEFAULT_ASSEMBLY_DIR;
}

/**
 * `npm run start:stack`: the synthesized stack, run on this machine (docs/operations.md, "The
 * synthesized stack, run locally"). Synthesizes with the same settings `cdk deploy` takes (the
 * deploy table's variables: TELEPHONY_PROVIDER, LLM_PROVIDER, …) into .build/stack.out, then runs the
 * template: its bundles, environments, roles, routes, queues, schedules and the voice task.
 *   --assembly DIR   run an assembly already synthesized (skip the synth)
 *   --secret NAME=VALUE   a secret's value, as `aws secretsmanager put-secret-value` would set it (repeatable)
 * LOCAL_API_KEYS (comma-separated) are provisioned, each in an organization of its own, as
 * `npm run admin` does after a deploy; none: one is generated. TICK_SECONDS as for `npm start`.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { runStack } from '../shared/local/stack/runner';
import { synthesize } from '../shared/local/stack/synth';
import { provisionOrganizationKey } from '../shared/local/stack/provision';

async function main() {
  const args = process.argv.slice(2);
  const value = (flag: string) => args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));
  const started = Date.now();
  let assemblyDir = value('--assembly')[0];
  if (!assemblyDir) {
    assemblyDir = resolve('.build', 'stack.out');
    console.log(`Synthesizing (cdk synth, bundling on) into ${assemblyDir} …`);
    const { millis } = await synthesize({ outDir: assemblyDir });
    console.log(`Synthesized in ${(millis / 1000).toFixed(1)} s`);
  }
  const secretValues = Object.fromEntries(value('--secret').map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
  const network = process.env.TWILIO_API_BASE ? { TWILIO_API_BASE: process.env.TWILIO_API_BASE } : undefined;
  const stack = await runStack({ assemblyDir, secretValues, network, tickSeconds: Number(process.env.TICK_SECONDS) || undefined, log: (line) => process.stderr.write(`${line}\n`) });
  const keys = (process.env.LOCAL_API_KEYS ?? '').split(',').map((k) => k.trim()).filter(Boolean);
  if (!keys.length) keys.push(`vap_${randomBytes(24).toString('base64url')}`);
  for (const [i, key] of keys.entries()) await provisionOrganizationKey(stack, { key, name: keys.length > 1 ? `Local ${i + 1}` : 'Local' });
  const c = stack.counts;
  console.log(
    [
      '',
      `The synthesized stack ${stack.assembly.pseudo.stackName}, running locally (ready in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
      `  HTTP API:       ${stack.url}/api/v1`,
      ...(stack.streamingUrl ? [`  Streaming API:  ${stack.streamingUrl}`] : []),
      ...(stack.relayUrl ? [`  Relay:          ${stack.relayUrl}`] : []),
      ...(stack.voiceUrl ? [`  Voice runtime:  ${stack.voiceUrl}`] : []),
      `  AWS endpoint:   ${stack.aws.endpoint}   (every function's AWS calls, checked against its role)`,
      `  From the template: ${c.functions} functions, ${c.httpRoutes} HTTP routes, ${c.restMethods} REST methods, ${c.webSocketRoutes} WebSocket routes, ${c.queues} queues (${c.eventSourceMappings} consumed), ${c.schedules} schedules, ${c.tasks} task(s)`,
      '',
      'Not run here (the template asks for it; this machine has no equivalent):',
      ...stack.report.map((line) => `  ${line}`),
      '',
      `API key${keys.length > 1 ? 's' : ''} (header X-Api-Key):`,
      ...keys.map((k) => `  ${k}`),
      '',
      'Ctrl-C stops everything.',
    ].join('\n'),
  );
  const shutdown = () => void stack.stop().then(() => process.exit(0), () => process.exit(1));
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  console.error(`\nThe synthesized stack could not start:\n${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

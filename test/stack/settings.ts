import { resolve } from 'node:path';

import { readDeployDoc } from './deploy-doc';

/**
 * The deploy settings the stack tier synthesizes with: production's command in docs/operations.md,
 * "Deploy" (the block "This block is what CI runs", read by deploy-doc.ts), its outside services
 * named by public URLs that `runStack({ urls })` points at the stand-ins, as DNS would.
 */
export const PRODUCTION_DEPLOY = readDeployDoc();
export const PRODUCTION_SETTINGS: Record<string, string> = PRODUCTION_DEPLOY.env;

/** Deploy settings a developer's shell may hold that would make the template other than production's. */
export const CLEARED_SETTINGS = [
  'TWILIO_SECRET_NAME', 'VOICE_RUNTIME_URL', 'VOICE_DOMAIN_NAME', 'VOICE_CERTIFICATE_ARN', 'VOICE_MIN_TASKS', 'VOICE_MAX_TASKS',
  'ANALYSIS_MODEL', 'ANALYSIS_SECRET_NAME', 'LLM_SECRET_NAME', 'LLM_TIMEOUT_MS', 'ANALYSIS_TIMEOUT_MS', 'API_THROTTLE_RATE', 'API_THROTTLE_BURST',
  'RATE_LIMIT_PER_MINUTE', 'LOG_RETENTION_DAYS', 'WIDGET_CONCURRENCY', 'MODEL_CONCURRENCY', 'SOURCE_MAPS', 'ALARM_EMAIL',
];

/** Where global-setup.ts synthesizes. */
export const DEFAULT_ASSEMBLY_DIR = resolve(__dirname, '..', '..', '.build', 'stack-ci.out');

/** The assembly the tier runs: global-setup exports it to the workers. */
export function assemblyDir(): string {
  const dir = process.env.STACK_CI_ASSEMBLY;
  if (!dir) throw new Error('STACK_CI_ASSEMBLY is not set: run the stack tier with jest --selectProjects stack (its global setup synthesizes)');
  return dir;
}

import { rmSync } from 'node:fs';
import { INTEGRATION_SERVERS, type IntegrationServers } from './global-setup';

/** Stops what global-setup.ts started: the Java process of DynamoDB Local included. */
export default async function globalTeardown(): Promise<void> {
  const servers = (globalThis as Record<symbol, unknown>)[INTEGRATION_SERVERS] as IntegrationServers | undefined;
  if (!servers) return;
  await Promise.allSettled([servers.dynamo?.stop(), servers.s3?.stop()]);
  rmSync(servers.dir, { recursive: true, force: true });
  delete (globalThis as Record<symbol, unknown>)[INTEGRATION_SERVERS];
}

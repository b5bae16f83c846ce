import { getItem } from '../../db/store';
import { bucketReachable } from '../../adapters/blob-store';
import { UnavailableError } from '../../errors';

async function check(fn: () => Promise<unknown>): Promise<string> {
  try {
    await Promise.race([fn(), new Promise((_, reject) => setTimeout(() => reject(new Error('timed out after 3 s')), 3000).unref())]);
    return 'ok';
  } catch (err) {
    return `failed: ${(err as Error).name}`;
  }
}

/** Readiness: the table and the bucket both answer, else 503 naming the one that failed. */
export async function readiness() {
  const [table, bucket] = await Promise.all([check(() => getItem({ pk: 'HEALTH', sk: 'HEALTH' }, false)), check(bucketReachable)]);
  const checks = { table, bucket };
  if (table !== 'ok' || bucket !== 'ok') {
    throw new UnavailableError(`Not ready: ${Object.entries(checks).filter(([, v]) => v !== 'ok').map(([k]) => k).join(', ')} unavailable`, { checks });
  }
  return { status: 'ready', checks };
}

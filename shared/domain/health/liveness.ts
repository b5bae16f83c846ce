import { config } from '../../config';

/** Liveness: answers without touching any dependency. */
export function liveness() {
  return { status: 'ok' as const, version: config().version };
}

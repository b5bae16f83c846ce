import { checkUrlShape, EgressRefusedError, FetchFailedError, resolveAllowed } from '../../adapters/egress';
import { config } from '../../config';
import { ValidationError } from '../../errors';

/**
 * Where a webhook may point, checked on create and PATCH (and again before every attempt by the
 * sender): an absolute http(s) URL without credentials, `https` in a deployed stack, whose host
 * resolves only to public addresses (loopback too when ALLOW_LOOPBACK_FETCH is set locally).
 */
export function webhookUrlProblem(raw: string): string | undefined {
  try {
    const url = checkUrlShape(raw);
    if (config().runtime !== 'local' && url.protocol !== 'https:') return 'must use https';
    return undefined;
  } catch (err) {
    if (err instanceof EgressRefusedError) return err.reason;
    throw err;
  }
}

/** A 400 naming `url` unless the URL passes the shape check and its host resolves to allowed addresses. */
export async function assertWebhookUrl(raw: string): Promise<string> {
  const problem = webhookUrlProblem(raw);
  if (problem) throw ValidationError.field('url', problem);
  const url = new URL(raw);
  try {
    await resolveAllowed(raw, url.hostname);
  } catch (err) {
    if (err instanceof EgressRefusedError || err instanceof FetchFailedError) throw ValidationError.field('url', err instanceof EgressRefusedError ? err.reason : err.message);
    throw err;
  }
  return raw;
}

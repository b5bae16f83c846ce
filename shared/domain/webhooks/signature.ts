import { createHmac, randomBytes } from 'node:crypto';

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): a secret is `whsec_` + base64 of
 * random bytes; a signature is `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">` keyed with
 * the decoded bytes. Several signatures are space-separated (a rotated secret still signing).
 */

const PREFIX = 'whsec_';
/** Random bytes in a new secret (the convention asks for 24 to 64). */
const SECRET_BYTES = 32;

/** A new signing secret, `whsec_…`. */
export function newWebhookSecret(): string {
  return `${PREFIX}${randomBytes(SECRET_BYTES).toString('base64')}`;
}

/** One `v1,…` signature of `<id>.<timestamp>.<body>` with a `whsec_` secret. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The headers of one delivery: the event id, the time, and one signature per secret (newest first). */
export function webhookHeaders(secrets: string[], id: string, timestamp: number, body: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': secrets.map((s) => sign(s, id, timestamp, body)).join(' '),
  };
}

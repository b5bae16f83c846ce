import { Webhook } from 'standardwebhooks';
import type { components } from './schema.js';

export { WebhookVerificationError } from 'standardwebhooks';

/** An event as the platform stores and delivers it (`GET /events` answers the same shape). */
export type WebhookEvent = components['schemas']['Event'];

/** Headers as a server framework hands them over: a fetch `Headers`, or Node's `req.headers`. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

/**
 * Verifies a delivery by the Standard Webhooks convention (HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>`, timestamps at most 5 minutes off) and returns the
 * event. `payload` must be the raw body exactly as received, never re-serialized JSON; `secret` is
 * the `whsec_…` that `POST /webhooks` (or `rotate-secret`) answered. Throws
 * `WebhookVerificationError` when the signature, the timestamp or a header is wrong.
 */
export function verifyWebhook(payload: string | Uint8Array, headers: WebhookHeaders, secret: string): WebhookEvent {
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  return new Webhook(secret).verify(body, plainHeaders(headers)) as WebhookEvent;
}

function plainHeaders(headers: WebhookHeaders): Record<string, string> {
  const plain: Record<string, string> = {};
  if (headers instanceof Headers) {
    headers.forEach((value, name) => (plain[name] = value));
    return plain;
  }
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) plain[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return plain;
}

import { checkUrlShape, EgressRefusedError, isLoopbackHost } from '../../adapters/egress';
import { secrets } from '../../adapters/secrets';
import { config } from '../../config';
import { ValidationError } from '../../errors';
import { newWebhookSecret } from '../webhooks/signature';
import type { PhoneNumberItem } from './model';

/**
 * A number's inbound routing webhook (operations.md, "Per-caller routing of inbound calls";
 * docs/api.md, "Per-caller routing"): where the platform asks, before answering a call, which
 * agent answers it. The URL policy is the webhook tools' (https; plain http only on the local
 * runtime, and here only to a loopback host), and the egress guard checks it again before every
 * request (public addresses only; loopback with ALLOW_LOOPBACK_FETCH). Setting a URL makes a new
 * signing secret (`whsec_…`), sealed with the secrets box like every other secret and answered
 * once; clearing the URL (null) clears its timeout and secret too.
 */

export const DEFAULT_INBOUND_WEBHOOK_TIMEOUT_MS = 3_000;

/** The webhook fields of a number write, as the bodies take them. */
export interface InboundWebhookInput {
  inbound_webhook_url?: string | null;
  inbound_webhook_timeout_ms?: number;
}

/** The attributes a write sets and removes, and the new secret to answer once (when a URL was set). */
export interface InboundWebhookChange {
  set: Partial<Pick<PhoneNumberItem, 'inbound_webhook_url' | 'inbound_webhook_timeout_ms' | 'inbound_webhook_secret_sealed'>>;
  remove: string[];
  secret?: string;
}

const WEBHOOK_ATTRIBUTES = ['inbound_webhook_url', 'inbound_webhook_timeout_ms', 'inbound_webhook_secret_sealed'] as const;

/**
 * Why `raw` may not be a number's inbound webhook, or undefined when it may. A loopback host is
 * refused here, as the egress guard would refuse it on every call, unless ALLOW_LOOPBACK_FETCH=true.
 */
export function inboundWebhookUrlProblem(raw: string): string | undefined {
  let url: URL;
  try {
    url = checkUrlShape(raw);
  } catch (err) {
    if (err instanceof EgressRefusedError) return err.reason;
    throw err;
  }
  // A loopback host (localhost, 127.0.0.0/8, ::1) got here only with ALLOW_LOOPBACK_FETCH=true (checkUrlShape refused it otherwise).
  if (url.protocol === 'https:') return undefined;
  if (config().runtime === 'local' && isLoopbackHost(url.hostname)) return undefined;
  return config().runtime === 'local' ? 'must use https (http only to a loopback host on the local runtime)' : 'must use https';
}

/**
 * The change a write of `input` makes to a number whose webhook is `current` (undefined for a
 * new number). 400s name `inbound_webhook_url` (refused URL) and `inbound_webhook_timeout_ms`
 * (a timeout for a number without a URL). The timeout defaults to 3,000 ms once a URL is set and
 * is kept when only the URL changes.
 */
export async function inboundWebhookChange(input: InboundWebhookInput, current?: Pick<PhoneNumberItem, 'inbound_webhook_url' | 'inbound_webhook_timeout_ms'>): Promise<InboundWebhookChange> {
  const { inbound_webhook_url: url, inbound_webhook_timeout_ms: timeout } = input;
  if (url === undefined && timeout === undefined) return { set: {}, remove: [] };
  if (url === null) {
    if (timeout !== undefined) throw ValidationError.field('inbound_webhook_timeout_ms', 'cannot be set while inbound_webhook_url is cleared');
    return { set: {}, remove: [...WEBHOOK_ATTRIBUTES] };
  }
  if (url === undefined) {
    if (!current?.inbound_webhook_url) throw ValidationError.field('inbound_webhook_timeout_ms', 'requires inbound_webhook_url (the number has no inbound webhook)');
    return { set: { inbound_webhook_timeout_ms: timeout }, remove: [] };
  }
  const problem = inboundWebhookUrlProblem(url);
  if (problem) throw ValidationError.field('inbound_webhook_url', problem);
  const secret = newWebhookSecret();
  return {
    set: {
      inbound_webhook_url: url,
      inbound_webhook_timeout_ms: timeout ?? current?.inbound_webhook_timeout_ms ?? DEFAULT_INBOUND_WEBHOOK_TIMEOUT_MS,
      inbound_webhook_secret_sealed: await secrets().seal(secret),
    },
    remove: [],
    secret,
  };
}

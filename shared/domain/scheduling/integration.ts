import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { config } from '../../config';
import { keys } from '../../db/keys';
import { deleteExisting, getItem, ConditionFailed, transact } from '../../db/store';
import { putItem } from '../../db/filtered-query';
import { secrets } from '../../adapters/secrets';
import { calcomProvider, CALCOM_DEFAULT_BASE_URL } from '../../adapters/scheduling/calcom';
import { SchedulerRefused, SchedulerUnavailable, type SchedulingProvider } from '../../adapters/scheduling/port';
import { NotFoundError, UnauthorizedError, UnprocessableError, ValidationError } from '../../errors';
import type { Integration, IntegrationInput } from './schemas';

interface IntegrationItem {
  provider: 'calcom';
  api_key_sealed: string;
  webhook_secret_sealed?: string;
  event_type_id: number;
  event_type_length?: number;
  base_url: string;
  account: string;
  connected_at: string;
}

/** Where Cal.com should send booking webhooks for this organization. */
export function webhookUrl(orgId: string): string {
  const base = (config().publicBaseUrl ?? '').replace(/\/+$/, '');
  return `${base}/api/v1/scheduler/webhooks/calcom/${orgId}`;
}

function view(orgId: string, item: IntegrationItem | undefined): Integration {
  if (!item) return { connected: false, provider: null };
  return {
    connected: true,
    provider: item.provider,
    event_type_id: item.event_type_id,
    base_url: item.base_url,
    account: item.account,
    has_webhook_secret: Boolean(item.webhook_secret_sealed),
    webhook_url: webhookUrl(orgId),
    connected_at: item.connected_at,
  };
}

/** Turns the provider's refusal or failure into the API's errors. */
export function providerError(err: unknown, action: string): Error {
  if (err instanceof SchedulerRefused) return new UnprocessableError(`Cal.com refused to ${action}: ${err.message}`, { provider: 'calcom', provider_status: err.status });
  if (err instanceof SchedulerUnavailable) return new UnprocessableError(`Cal.com is unavailable: ${err.message}`, { provider: 'calcom' });
  return err as Error;
}

/**
 * Connects Cal.com: the key and event type are verified against Cal.com first (422 when
 * refused), then the key and the webhook secret are sealed (KMS deployed, a local key locally)
 * and stored. A repeat PUT replaces the connection; a PUT without `webhook_secret` keeps the old one.
 */
export async function connectIntegration(orgId: string, input: IntegrationInput): Promise<Integration> {
  const baseUrl = (input.base_url ?? CALCOM_DEFAULT_BASE_URL).replace(/\/+$/, '');
  if (config().runtime !== 'local' && !baseUrl.toLowerCase().startsWith('https://')) throw ValidationError.field('base_url', 'must use https');
  let verified: Awaited<ReturnType<SchedulingProvider['verify']>>;
  try {
    verified = await calcomProvider({ apiKey: input.api_key, eventTypeId: input.event_type_id, baseUrl }).verify();
  } catch (err) {
    throw providerError(err, 'accept the API key or event type');
  }
  const previous = await getItem<IntegrationItem>(keys.schedulingIntegration(orgId));
  const item: IntegrationItem = {
    provider: 'calcom',
    api_key_sealed: await secrets().seal(input.api_key),
    ...(input.webhook_secret
      ? { webhook_secret_sealed: await secrets().seal(input.webhook_secret) }
      : previous?.webhook_secret_sealed
        ? { webhook_secret_sealed: previous.webhook_secret_sealed }
        : {}),
    event_type_id: input.event_type_id,
    ...(verified.eventTypeLength ? { event_type_length: verified.eventTypeLength } : {}),
    base_url: baseUrl,
    account: verified.account,
    connected_at: new Date().toISOString(),
  };
  await transact([putItem({ ...keys.schedulingIntegration(orgId), entity: 'SCHEDULING_INTEGRATION', ...item })]);
  return view(orgId, item);
}

export async function getIntegration(orgId: string): Promise<Integration> {
  return view(orgId, await getItem<IntegrationItem>(keys.schedulingIntegration(orgId)));
}

export async function disconnectIntegration(orgId: string): Promise<void> {
  try {
    await transact([deleteExisting(keys.schedulingIntegration(orgId))]);
  } catch (err) {
    if (err instanceof ConditionFailed) throw new NotFoundError('Scheduling integration');
    throw err;
  }
}

/** The connected provider, or undefined when the built-in calendar books. */
export async function connectedProvider(orgId: string): Promise<SchedulingProvider | undefined> {
  const item = await getItem<IntegrationItem>(keys.schedulingIntegration(orgId));
  if (!item) return undefined;
  return calcomProvider({ apiKey: await secrets().open(item.api_key_sealed), eventTypeId: item.event_type_id, baseUrl: item.base_url, eventTypeLength: item.event_type_length });
}

let decoySealed: Promise<string> | undefined;

/**
 * Checks `X-Cal-Signature-256`: the hex HMAC-SHA256 of the raw body keyed with the webhook
 * secret; 401 on a mismatch. An organization without a Cal.com connection (or without a
 * secret, or none at all) gets the very same 401, after the same work against a decoy secret
 * sealed once per container, so neither the answer nor its timing tells a stranger which
 * organizations exist.
 */
export async function verifyCalcomSignature(orgId: string, rawBody: string, signature: string | undefined): Promise<void> {
  const item = await getItem<IntegrationItem>(keys.schedulingIntegration(orgId));
  const sealed = item?.webhook_secret_sealed ?? (await (decoySealed ??= secrets().seal(randomBytes(32).toString('hex'))));
  const expected = createHmac('sha256', await secrets().open(sealed)).update(rawBody, 'utf8').digest('hex');
  // Digests of both sides have one length whatever was sent, so the comparison is constant-time and cannot throw.
  const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();
  const matches = timingSafeEqual(digest((signature ?? '').trim().toLowerCase()), digest(expected));
  if (!matches || !item?.webhook_secret_sealed) throw new UnauthorizedError('Invalid X-Cal-Signature-256');
}

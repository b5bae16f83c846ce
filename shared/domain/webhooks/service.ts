import { v7 as uuidv7 } from 'uuid';
import { secrets } from '../../adapters/secrets';
import { collections, keys, Prefix } from '../../db/keys';
import { MAX_ATTEMPTS, pause } from '../../db/retry';
import { noteDue } from '../../db/sweep-marker';
import { cappedCounterIncrement, ConditionFailed, deleteExisting, getItem, putNew, queryAll, transact, updateExisting, type PageRequest } from '../../db/store';
import { ConflictError, NotFoundError, UnprocessableError } from '../../errors';
import { logger } from '../../logger';
import { listCollection, requireSomeField } from '../common/collection';
import type { EventType } from '../events/types';
import { MAX_WEBHOOKS_PER_ORG, type CreateWebhookInput, type UpdateWebhookInput, type Webhook } from './schemas';
import { newWebhookSecret } from './signature';
import { assertWebhookUrl } from './url';

/** How long a rotated-out secret keeps signing beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000;

/** The stored endpoint: the view's fields plus its sealed secrets (never shown, never logged). */
export interface WebhookItem extends Webhook {
  pk: string;
  sk: string;
  version: number;
  secret_sealed: string;
  previous_secret_sealed?: string;
}

const ENTITY = 'WEBHOOK';

/** The public view: an explicit list of fields, so a sealed secret can never leak into an answer. */
export function webhookView(item: WebhookItem): Webhook {
  return {
    id: item.id,
    organization_id: item.organization_id,
    url: item.url,
    events: item.events,
    description: item.description,
    enabled: item.enabled,
    previous_secret_expires_at: item.previous_secret_sealed ? (item.previous_secret_expires_at ?? null) : null,
    created_at: item.created_at,
    updated_at: item.updated_at,
  };
}

/** Whether an endpoint subscribes to a kind (`ping` is sent only by the test request, to one endpoint). */
export function subscribes(endpoint: Pick<Webhook, 'events'>, type: EventType): boolean {
  return endpoint.events.includes('*') || endpoint.events.includes(type);
}

/** The secrets that sign a delivery at `now`: the current one, and the previous one during its overlap. */
export async function signingSecrets(item: WebhookItem, now: number): Promise<string[]> {
  const box = secrets();
  const current = await box.open(item.secret_sealed);
  const previousValid = item.previous_secret_sealed && item.previous_secret_expires_at && Date.parse(item.previous_secret_expires_at) > now;
  return previousValid ? [current, await box.open(item.previous_secret_sealed!)] : [current];
}

export async function findWebhook(orgId: string, id: string): Promise<WebhookItem | undefined> {
  return getItem<WebhookItem>(keys.webhook(orgId, id));
}

async function webhookOr404(orgId: string, id: string): Promise<WebhookItem> {
  const item = await findWebhook(orgId, id);
  if (!item) throw new NotFoundError('Webhook', id);
  return item;
}

/** The organization's endpoints (at most MAX_WEBHOOKS_PER_ORG: one small Query); the container's copy is refreshed with them. */
export async function allWebhooks(orgId: string): Promise<WebhookItem[]> {
  const items: WebhookItem[] = [];
  for await (const item of queryAll<WebhookItem>({ pkName: 'pk', pkValue: keys.partition(orgId), skName: 'sk', skPrefix: Prefix.webhook }, undefined, true)) items.push(item);
  if (known.size >= KNOWN_ORGS_MAX) known.clear();
  known.set(orgId, { until: Date.now() + ENDPOINTS_CACHE_MS, items });
  return items;
}

/** How long a container trusts its copy of an organization's endpoints to say that an event goes nowhere. */
export const ENDPOINTS_CACHE_MS = 60_000;
const KNOWN_ORGS_MAX = 10_000;
const known = new Map<string, { until: number; items: WebhookItem[] }>();

/**
 * The organization's endpoints as this container read them within ENDPOINTS_CACHE_MS (undefined
 * when it has no such copy). Only ever used to decide that no endpoint wants an event: an
 * endpoint created, enabled or subscribed since (in another container) is missed for at most that
 * long, and the event is not lost: its undispatched entry stays, and the minute sweep, which reads
 * the endpoints afresh, fans it out (deliveries.ts). This container's own changes drop the copy.
 */
export function cachedWebhooks(orgId: string): WebhookItem[] | undefined {
  const copy = known.get(orgId);
  return copy && copy.until > Date.now() ? copy.items : undefined;
}

/**
 * After an endpoint is created or changed: this container's copy is dropped, and the webhook sweep
 * is made due once every other container's copy has lapsed (ENDPOINTS_CACHE_MS), so an event a
 * stale copy passed over in that minute reaches the endpoint a minute or two late, not at the
 * sweep's 15-minute horizon.
 */
async function endpointsChanged(orgId: string): Promise<void> {
  known.delete(orgId);
  await noteDue('webhook-sweep', new Date(Date.now() + ENDPOINTS_CACHE_MS + 5_000).toISOString()).catch((err: unknown) =>
    logger.warn('The webhook sweep could not be made due after an endpoint changed; it comes at its horizon', { organization_id: orgId, error: err as Error }),
  );
}

/** Whether any enabled endpoint wants an event of `type` (of any type when it is not known). */
export function anyEndpointFor(endpoints: WebhookItem[], type: EventType | undefined): boolean {
  return endpoints.some((w) => w.enabled && (!type || subscribes(w, type)));
}

/**
 * Creates an endpoint with a new secret, answered once. The count of endpoints is an increment
 * conditioned on staying below the cap, in the endpoint's own transaction: racing creations
 * can never pass the cap.
 */
export async function createWebhook(orgId: string, input: CreateWebhookInput): Promise<Webhook & { secret: string }> {
  const url = await assertWebhookUrl(input.url);
  const secret = newWebhookSecret();
  const now = new Date().toISOString();
  const webhook: Webhook = {
    id: uuidv7(),
    organization_id: orgId,
    url,
    events: input.events,
    description: input.description ?? '',
    enabled: input.enabled ?? true,
    previous_secret_expires_at: null,
    created_at: now,
    updated_at: now,
  };
  const item = { ...keys.webhook(orgId, webhook.id), entity: ENTITY, version: 1, ...webhook, secret_sealed: await secrets().seal(secret) };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact([putNew(item), cappedCounterIncrement(orgId, collections.webhooks, MAX_WEBHOOKS_PER_ORG)]);
      await endpointsChanged(orgId);
      return { ...webhook, secret };
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (err.message !== 'transaction conflict') {
        throw new UnprocessableError(`An organization can have at most ${MAX_WEBHOOKS_PER_ORG} webhook endpoints`, { limit: MAX_WEBHOOKS_PER_ORG });
      }
      await pause(attempt);
    }
  }
  throw new ConflictError('Too many concurrent changes to the organization\'s webhooks; retry');
}

export async function getWebhook(orgId: string, id: string): Promise<Webhook> {
  return webhookView(await webhookOr404(orgId, id));
}

export function listWebhooks(orgId: string, query: PageRequest) {
  return listCollection(orgId, Prefix.webhook, collections.webhooks, query, webhookView);
}

/** Changes the given fields, conditioned on the version read. Disabling stops deliveries at their next attempt. */
export async function updateWebhook(orgId: string, id: string, input: UpdateWebhookInput): Promise<Webhook> {
  requireSomeField(input);
  const set: Record<string, unknown> = { ...input };
  if (input.url !== undefined) set.url = await assertWebhookUrl(input.url);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await webhookOr404(orgId, id);
    const updated_at = new Date().toISOString();
    try {
      await transact([updateExisting(keys.webhook(orgId, id), { ...set, updated_at }, { condition: '#ver = :ver', names: { '#ver': 'version' }, values: { ':ver': item.version } })]);
      await endpointsChanged(orgId);
      return webhookView({ ...item, ...set, updated_at } as WebhookItem);
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('The webhook is being changed by other requests; retry', { id });
}

/** Deletes an endpoint; its pending retries are dropped at their next attempt, its log expires with its TTL. */
export async function deleteWebhook(orgId: string, id: string): Promise<void> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    try {
      await transact([deleteExisting(keys.webhook(orgId, id))], [{ orgId, collection: collections.webhooks, delta: -1 }]);
      known.delete(orgId);
      return;
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      if (!(await findWebhook(orgId, id))) throw new NotFoundError('Webhook', id);
      await pause(attempt);
    }
  }
  throw new ConflictError('The webhook is being changed by other requests; retry', { id });
}

/**
 * A new secret, answered once. The old one keeps signing beside it (space-separated signatures,
 * new first) for 24 h, so receivers can switch without losing a delivery; a second rotation
 * within those 24 h retires the oldest at once.
 */
export async function rotateWebhookSecret(orgId: string, id: string): Promise<Webhook & { secret: string }> {
  const secret = newWebhookSecret();
  const sealed = await secrets().seal(secret);
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const item = await webhookOr404(orgId, id);
    const now = Date.now();
    const set = {
      secret_sealed: sealed,
      previous_secret_sealed: item.secret_sealed,
      previous_secret_expires_at: new Date(now + ROTATION_OVERLAP_MS).toISOString(),
      updated_at: new Date(now).toISOString(),
    };
    try {
      await transact([updateExisting(keys.webhook(orgId, id), set, { condition: '#ver = :ver', names: { '#ver': 'version' }, values: { ':ver': item.version } })]);
      return { ...webhookView({ ...item, ...set }), secret };
    } catch (err) {
      if (!(err instanceof ConditionFailed)) throw err;
      await pause(attempt);
    }
  }
  throw new ConflictError('The webhook is being changed by other requests; retry', { id });
}

export { webhookOr404 };

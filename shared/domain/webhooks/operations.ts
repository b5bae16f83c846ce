import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { CreateWebhookBody, Delivery, DeliveryListQuery, DeliveryParams, MAX_WEBHOOKS_PER_ORG, UpdateWebhookBody, Webhook, WebhookListQuery, WebhookWithSecret } from './schemas';

const tag = 'Webhooks';
/**
 * test and redeliver answer one attempt made inside the request: 15 s for the attempt, plus name
 * resolution and a few writes, under API Gateway's 30 s integration limit.
 */
const SYNC_ATTEMPT_TIMEOUT_SECONDS = 25;

export const createWebhook = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/webhooks', operationId: 'createWebhook', tag, auth: true,
  summary: 'Create a webhook endpoint (`url`, `events` or ["*"]); answers its signing `secret` (whsec_…) once',
  entry: 'functions/webhooks/create.ts', body: CreateWebhookBody,
  successMessage: 'Webhook created successfully', access: { table: 'RW', secrets: true },
  errors: { 422: `The organization has the most webhook endpoints it may have (${MAX_WEBHOOKS_PER_ORG})` },
});

export const listWebhooks = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/webhooks', operationId: 'listWebhooks', tag, auth: true,
  summary: 'List the organization\'s webhook endpoints (never their secrets)',
  entry: 'functions/webhooks/list.ts', query: WebhookListQuery, list: true, access: { table: 'R' },
});

export const getWebhook = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/webhooks/{id}', operationId: 'getWebhook', tag, auth: true,
  summary: 'Get one webhook endpoint', entry: 'functions/webhooks/get.ts', params: IdParams, access: { table: 'R' },
});

export const updateWebhook = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/webhooks/{id}', operationId: 'updateWebhook', tag, auth: true,
  summary: 'Change `url`, `events`, `description` or `enabled` (disabling drops pending retries)',
  entry: 'functions/webhooks/update.ts', params: IdParams, body: UpdateWebhookBody,
  successMessage: 'Webhook updated successfully', access: { table: 'RW' },
});

export const deleteWebhook = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/webhooks/{id}', operationId: 'deleteWebhook', tag, auth: true,
  summary: 'Delete a webhook endpoint (pending retries are dropped)', entry: 'functions/webhooks/delete.ts', params: IdParams,
  successMessage: 'Webhook deleted successfully', access: { table: 'RW' },
});

export const listWebhookDeliveries = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/webhooks/{id}/deliveries', operationId: 'listWebhookDeliveries', tag, auth: true,
  summary: 'Delivery attempts of an endpoint, newest first (kept 30 days); filter `succeeded`',
  entry: 'functions/webhooks/deliveries.ts', params: IdParams, query: DeliveryListQuery, list: true, access: { table: 'R' },
});

export const redeliverWebhook = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver', operationId: 'redeliverWebhook', tag, auth: true,
  summary: 'Send that attempt\'s event again now (same `webhook-id`); answers the new attempt',
  entry: 'functions/webhooks/redeliver.ts', params: DeliveryParams,
  successMessage: 'Event redelivered', access: { table: 'RW', secrets: true }, timeoutSeconds: SYNC_ATTEMPT_TIMEOUT_SECONDS,
  errors: { 422: 'The event is no longer stored (events are kept 30 days)' },
});

export const testWebhook = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/webhooks/{id}/test', operationId: 'testWebhook', tag, auth: true,
  summary: 'Send a signed `ping` event to this endpoint now; answers the attempt',
  entry: 'functions/webhooks/test.ts', params: IdParams,
  successMessage: 'Test event sent', access: { table: 'RW', secrets: true }, timeoutSeconds: SYNC_ATTEMPT_TIMEOUT_SECONDS,
});

export const rotateWebhookSecret = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/webhooks/{id}/rotate-secret', operationId: 'rotateWebhookSecret', tag, auth: true,
  summary: 'A new signing secret, answered once; the old one keeps signing beside it for 24 h',
  entry: 'functions/webhooks/rotate-secret.ts', params: IdParams,
  successMessage: 'Webhook secret rotated', access: { table: 'RW', secrets: true },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createWebhook.response = WebhookWithSecret;
  listWebhooks.response = Webhook;
  getWebhook.response = Webhook;
  updateWebhook.response = Webhook;
  listWebhookDeliveries.response = Delivery;
  redeliverWebhook.response = Delivery;
  testWebhook.response = Delivery;
  rotateWebhookSecret.response = WebhookWithSecret;
}

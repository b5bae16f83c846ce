import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import { ApiKey, ApiKeyListQuery, CreateApiKeyBody, IssuedApiKey } from './schemas';

export const createApiKey = /* @__PURE__ */ defineOperation({
  method: 'POST',
  path: '/api/v1/api-keys',
  operationId: 'createApiKey',
  summary: 'Issue a new API key for the caller\'s organization (the key is shown only in this answer)',
  tag: 'API keys',
  entry: 'functions/api-keys/create.ts',
  auth: true,
  body: CreateApiKeyBody,
  access: { table: 'RW' },
});

export const listApiKeys = /* @__PURE__ */ defineOperation({
  method: 'GET',
  path: '/api/v1/api-keys',
  operationId: 'listApiKeys',
  summary: 'List the organization\'s live API keys (never their secrets)',
  tag: 'API keys',
  entry: 'functions/api-keys/list.ts',
  auth: true,
  query: ApiKeyListQuery,
  list: true,
  access: { table: 'R' },
});

export const revokeApiKey = /* @__PURE__ */ defineOperation({
  method: 'DELETE',
  path: '/api/v1/api-keys/{id}',
  operationId: 'revokeApiKey',
  summary: 'Revoke an API key: it answers 401 from then on',
  tag: 'API keys',
  entry: 'functions/api-keys/revoke.ts',
  auth: true,
  params: IdParams,
  successMessage: 'API key revoked',
  access: { table: 'RW' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createApiKey.response = IssuedApiKey;
  listApiKeys.response = ApiKey;
}

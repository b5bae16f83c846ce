import * as z from 'zod/mini';
import { named } from '../common/named';
import { pageQueryShape } from '../common/schemas';
import { lazy } from '../common/lazy';

export const CreateApiKeyBody = /* @__PURE__ */ named('CreateApiKeyRequest', () => z.strictObject({
  name: z.string().check(z.minLength(1), z.maxLength(100)),
  expires_at: z.optional(z.iso.datetime({ offset: true })),
}));

export const ApiKeyListQuery = /* @__PURE__ */ lazy(() => z.strictObject(pageQueryShape));

export const ApiKey = /* @__PURE__ */ named('ApiKey', () => z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  created_at: z.string(),
  expires_at: z.optional(z.string()),
  last_used_at: z.optional(z.string()),
}), 'An API key as listed: never its secret');

export const IssuedApiKey = /* @__PURE__ */ named('IssuedApiKey', () => z.object({ ...ApiKey.shape, key: z.string() }), 'A newly issued API key: `key` is shown only in this answer');

import { defineOperation } from '../../http/operation';
import { CreateWebCallBody, WebCallStarted } from './web-call-schemas';

export const createWebCall = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/web-calls', operationId: 'createWebCall', tag: 'Calls', auth: true,
  summary: 'Start a call in the browser (`channel` `web`): the call session `ringing`, the voice runtime\'s WebSocket `url` and a one-use `token` valid 60 s (docs/api.md, "Web calls", has the browser protocol); no number, no carrier, no charge',
  entry: 'functions/web-calls/create.ts', body: CreateWebCallBody,
  successMessage: 'Web call created', access: { table: 'RW', tokens: true },
  errors: { 422: 'The agent is not active', 429: 'Over the API key\'s rate (`RATE_LIMITED`), or the organization\'s live calls are at its concurrency limit (`CONCURRENCY_LIMIT`, `error.details` `limit` and `in_progress`): nothing is created; retry after `Retry-After` seconds', 503: 'No speech model is configured (`error.details.setting` names it: REALTIME_API_KEY; `settings` adds REALTIME_BASE_URL for another server), or no voice runtime (VOICE_RUNTIME_URL); only once the request itself is valid (a 400 or 422 comes first)' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  createWebCall.response = WebCallStarted;
}

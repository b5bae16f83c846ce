import { defineOperation } from '../../http/operation';
import { Concurrency, UpdateConcurrencyBody } from './schemas';

const tag = 'Concurrency';

export const getConcurrency = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/concurrency', operationId: 'getConcurrency', tag, auth: true,
  summary: 'The organization\'s concurrency limit, the operator\'s ceiling, its live calls by kind and its calls waiting for a slot',
  entry: 'functions/concurrency/get.ts',
  access: { table: 'R' },
});

export const updateConcurrency = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/concurrency', operationId: 'updateConcurrency', tag, auth: true,
  summary: 'Set the organization\'s concurrency limit (1 … ceiling); calls already live are not ended by a lower limit, new ones wait until they fit; a higher limit places waiting calls at once',
  entry: 'functions/concurrency/update.ts', body: UpdateConcurrencyBody,
  successMessage: 'Concurrency limit updated successfully', access: { table: 'RW', queues: ['call-place'] },
  errors: { 422: 'The limit is above the organization\'s ceiling (`error.details.ceiling`)' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  getConcurrency.response = Concurrency;
  updateConcurrency.response = Concurrency;
}

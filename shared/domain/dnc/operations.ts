import { defineOperation } from '../../http/operation';
import { AddDncBody, DncEntry, DncListQuery, DncPhoneParams } from './schemas';

const tag = 'Do-not-call list';

export const addDncEntry = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/dnc', operationId: 'addDncEntry', tag, auth: true,
  summary: 'Put a number on the organization\'s do-not-call list (stored in E.164); a listed number answers its existing entry',
  entry: 'functions/dnc/add.ts', body: AddDncBody,
  successMessage: 'Number is on the do-not-call list', access: { table: 'RW' },
});

export const listDncEntries = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/dnc', operationId: 'listDncEntries', tag, auth: true,
  summary: 'List the do-not-call list in number order; `phone` looks one number up',
  entry: 'functions/dnc/list.ts', query: DncListQuery, list: true, access: { table: 'R' },
});

export const removeDncEntry = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/dnc/{phone}', operationId: 'removeDncEntry', tag, auth: true,
  summary: 'Take a number off the do-not-call list (the E.164 number, URL-encoded); 404 when it is not listed',
  entry: 'functions/dnc/remove.ts', params: DncPhoneParams,
  successMessage: 'Number removed from the do-not-call list', access: { table: 'RW' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  addDncEntry.response = DncEntry;
  listDncEntries.response = DncEntry;
}

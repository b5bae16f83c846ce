import * as z from 'zod/mini';
import { defineOperation } from '../../http/operation';
import { named } from '../common/named';
import { REDOC_SCRIPT_FILE, REDOC_SCRIPT_SOURCE } from './reference-page';

const Health = /* @__PURE__ */ named('Health', () => z.object({ status: z.literal('ok'), version: z.string() }), 'The API answers');
const Readiness = /* @__PURE__ */ named(
  'Readiness',
  () => z.object({ status: z.string(), checks: z.record(z.string(), z.string()) }),
  'Each dependency and its state (`ok`, or `failed: <reason>`)',
);

export const getHealth = /* @__PURE__ */ defineOperation({
  method: 'GET',
  path: '/api/v1/health',
  operationId: 'getHealth',
  summary: 'Liveness: the API answers',
  tag: 'Health',
  entry: 'functions/health/live.ts',
  auth: false,
  access: {},
});

export const getReadiness = /* @__PURE__ */ defineOperation({
  method: 'GET',
  path: '/api/v1/health/ready',
  operationId: 'getReadiness',
  summary: 'Readiness: the table and the bucket answer (503 naming the one that does not)',
  tag: 'Health',
  entry: 'functions/health/ready.ts',
  auth: false,
  access: { table: 'R', bucket: 'head' },
  errors: { 503: 'The table or the bucket does not answer; `error.details.checks` names each' },
});

export const getOpenApi = /* @__PURE__ */ defineOperation({
  method: 'GET',
  path: '/api/v1/openapi.json',
  operationId: 'getOpenApi',
  summary: 'The OpenAPI 3.1 document of this API (no key)',
  tag: 'Health',
  entry: 'functions/system/openapi.ts',
  auth: false,
  rawResponse: true,
  access: {},
  // Shipped as a file beside the bundle and parsed on first request (JSON.parse is far quicker than loading it as code).
  bundleFiles: [{ from: 'docs/openapi.json', to: 'openapi.json' }],
});

export const getApiReference = /* @__PURE__ */ defineOperation({
  method: 'GET',
  path: '/api/v1/docs',
  operationId: 'getApiReference',
  summary: 'The API reference: this document rendered by Redoc, in a browser (no key; loads nothing from the internet)',
  tag: 'Health',
  entry: 'functions/system/reference.ts',
  auth: false,
  rawResponse: true,
  rawContentType: 'text/html',
  access: {},
});

export const getApiReferenceScript = /* @__PURE__ */ defineOperation({
  method: 'GET',
  path: '/api/v1/docs/redoc.js',
  operationId: 'getApiReferenceScript',
  summary: 'Redoc\'s standalone script, served for the reference page (no key)',
  tag: 'Health',
  entry: 'functions/system/reference-script.ts',
  auth: false,
  rawResponse: true,
  rawContentType: 'text/javascript',
  access: {},
  bundleFiles: [{ from: REDOC_SCRIPT_SOURCE, to: REDOC_SCRIPT_FILE }],
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  getHealth.response = Health;
  getReadiness.response = Readiness;
}

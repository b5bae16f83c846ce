import { defineOperation } from '../../http/operation';
import { IdParams } from '../common/schemas';
import {
  AvailableNumber,
  AvailableNumbersQuery,
  BuyBody,
  ImportBody,
  PhoneNumber,
  PhoneNumberListQuery,
  UpdateImportBody,
  UpdatePhoneNumberBody,
} from './schemas';

const tag = 'Phone numbers';

export const listAvailablePhoneNumbers = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/phone-numbers/available', operationId: 'listAvailablePhoneNumbers', tag, auth: true,
  summary: 'Numbers the carrier offers, with monthly and per-minute prices (country default US, area_code, contains, limit)',
  entry: 'functions/phone-numbers/available.ts', query: AvailableNumbersQuery, list: true,
  access: { table: 'R', telephony: true },
  errors: { 503: 'The carrier cannot be reached; retry later' },
});

export const buyPhoneNumber = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/phone-numbers/buy', operationId: 'buyPhoneNumber', tag, auth: true,
  summary: 'Buy a listed number at its listed price (422 otherwise); charges the account once, in the same transaction',
  entry: 'functions/phone-numbers/buy.ts', body: BuyBody,
  successMessage: 'Phone number purchased successfully', access: { table: 'RW', telephony: true, secrets: true },
  errors: {
    409: 'The number is held already, by this or another organization',
    422: 'The number is not listed, a price does not match the listing, or the carrier refused the sale',
    503: 'The carrier cannot be reached; nothing was bought or charged',
  },
});

export const importPhoneNumber = /* @__PURE__ */ defineOperation({
  method: 'POST', path: '/api/v1/phone-numbers/import', operationId: 'importPhoneNumber', tag, auth: true,
  summary: 'Import a number you already hold (SIP trunk or PSTN); 409 when anyone holds it already',
  entry: 'functions/phone-numbers/import.ts', body: ImportBody,
  successMessage: 'Phone number imported successfully', access: { table: 'RW', secrets: true },
  errors: { 409: 'The number is held already, by this or another organization' },
});

export const updateImportedPhoneNumber = /* @__PURE__ */ defineOperation({
  method: 'PUT', path: '/api/v1/phone-numbers/import/{id}', operationId: 'updateImportedPhoneNumber', tag, auth: true,
  summary: 'Update an imported number: only the fields given (name, termination_uri, sip_username, sip_password) are replaced',
  entry: 'functions/phone-numbers/update-import.ts', params: IdParams, body: UpdateImportBody,
  successMessage: 'Phone number updated successfully', access: { table: 'RW', secrets: true },
});

export const listPhoneNumbers = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/phone-numbers', operationId: 'listPhoneNumbers', tag, auth: true,
  summary: 'Every number the organization holds or held, bought and imported (`source`); released ones carry status `released`',
  entry: 'functions/phone-numbers/list.ts', query: PhoneNumberListQuery, list: true,
  access: { table: 'R', secrets: true },
});

export const getPhoneNumber = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/phone-numbers/{id}', operationId: 'getPhoneNumber', tag, auth: true,
  summary: 'Get one phone number', entry: 'functions/phone-numbers/get.ts', params: IdParams,
  access: { table: 'R', secrets: true },
});

export const updatePhoneNumber = /* @__PURE__ */ defineOperation({
  method: 'PATCH', path: '/api/v1/phone-numbers/{id}', operationId: 'updatePhoneNumber', tag, auth: true,
  summary: 'Rename a number, set the agent that answers its calls (`inbound_agent_id`, or null) or its inbound routing webhook (`inbound_webhook_url`, `inbound_webhook_timeout_ms`; the new `inbound_webhook_secret` is answered once)',
  entry: 'functions/phone-numbers/update.ts', params: IdParams, body: UpdatePhoneNumberBody,
  successMessage: 'Phone number updated successfully', access: { table: 'RW', secrets: true },
});

export const releasePhoneNumber = /* @__PURE__ */ defineOperation({
  method: 'DELETE', path: '/api/v1/phone-numbers/{id}', operationId: 'releasePhoneNumber', tag, auth: true,
  summary: 'Release a number: status `released`, billing stops, it returns to the pool; 409 while a campaign uses it',
  entry: 'functions/phone-numbers/release.ts', params: IdParams,
  successMessage: 'Phone number released successfully', access: { table: 'RW', telephony: true },
  errors: {
    409: 'Already released, or a running campaign dials from it',
    503: 'The carrier cannot be reached; the number is released here, and repeating the DELETE finishes the carrier side',
  },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  listAvailablePhoneNumbers.response = AvailableNumber;
  buyPhoneNumber.response = PhoneNumber;
  importPhoneNumber.response = PhoneNumber;
  updateImportedPhoneNumber.response = PhoneNumber;
  listPhoneNumbers.response = PhoneNumber;
  getPhoneNumber.response = PhoneNumber;
  updatePhoneNumber.response = PhoneNumber;
}

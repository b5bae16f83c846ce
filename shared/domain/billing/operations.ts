import { defineOperation } from '../../http/operation';
import { Charge, ChargeListQuery, ChargesTotal, ChargesTotalQuery } from './schemas';

const tag = 'Billing';

export const listCharges = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/billing/charges', operationId: 'listCharges', tag, auth: true,
  summary: 'The organization\'s billing ledger, oldest first: every charge with amount, currency, reason, resource and time',
  entry: 'functions/billing/list-charges.ts', query: ChargeListQuery, list: true, access: { table: 'R' },
});

export const getChargesTotal = /* @__PURE__ */ defineOperation({
  method: 'GET', path: '/api/v1/billing/total', operationId: 'getChargesTotal', tag, auth: true,
  summary: 'The exact sum of the ledger per currency (integer units of 1/10,000), optionally of the charges created in [from, to)',
  entry: 'functions/billing/get-total.ts', query: ChargesTotalQuery, access: { table: 'R' },
});

// What each operation answers (`data` of its success envelope), read by the OpenAPI document
// and the tests. Function bundles drop this block (lib/bundle.ts, `dropLabels`): no function reads
// its own response schema, and building one cost every cold start (docs/operations.md, "Bundles
// and cold starts").
RESPONSES: {
  listCharges.response = Charge;
  getChargesTotal.response = ChargesTotal;
}

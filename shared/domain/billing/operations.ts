import { defineOperation } from '../../http/operation';
import { Charge, ChargeListQuery } from './schemas';

const tag = 'Billing';

export const listCharges = defineOperation({
  method: 'GET', path: '/api/v1/billing/charges', operationId: 'listCharges', tag, auth: true,
  summary: 'The organization\'s billing ledger, oldest first: every charge with amount, currency, reason, resource and time',
  entry: 'functions/billing/list-charges.ts', query: ChargeListQuery, response: Charge, list: true, access: { table: 'R' },
});

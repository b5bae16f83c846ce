import { http } from '../../shared/http/handler';
import { getChargesTotal as op } from '../../shared/domain/billing/operations';
import { chargesTotal } from '../../shared/domain/billing/service';

export const handler = http(op, ({ caller, query }) => chargesTotal(caller.organizationId, query));

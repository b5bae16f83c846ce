import { http } from '../../shared/http/handler';
import { listCharges as op } from '../../shared/domain/billing/operations';
import { listCharges } from '../../shared/domain/billing/service';

export const handler = http(op, ({ caller, query }) => listCharges(caller.organizationId, query));

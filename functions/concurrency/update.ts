import { http } from '../../shared/http/handler';
import { updateConcurrency as op } from '../../shared/domain/concurrency/operations';
import { updateConcurrency } from '../../shared/domain/concurrency/service';

export const handler = http(op, ({ caller, body }) => updateConcurrency(caller.organizationId, body));

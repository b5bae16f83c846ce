import { http } from '../../shared/http/handler';
import { listApiKeys as op } from '../../shared/domain/api-keys/operations';
import { listApiKeys } from '../../shared/domain/api-keys/service';

export const handler = http(op, ({ caller, query }) => listApiKeys(caller.organizationId, query));

import { http } from '../../shared/http/handler';
import { revokeApiKey as op } from '../../shared/domain/api-keys/operations';
import { revokeApiKey } from '../../shared/domain/api-keys/service';

export const handler = http(op, ({ caller, params }) => revokeApiKey(caller.organizationId, params.id));

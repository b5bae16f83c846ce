import { http } from '../../shared/http/handler';
import { getAgentVersion as op } from '../../shared/domain/agents/operations';
import { getVersion } from '../../shared/domain/agents/versions';

export const handler = http(op, ({ caller, params }) => getVersion(caller.organizationId, params.id, params.version));

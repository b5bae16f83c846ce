import { http } from '../../shared/http/handler';
import { listAgentVersions as op } from '../../shared/domain/agents/operations';
import { listVersions } from '../../shared/domain/agents/versions';

export const handler = http(op, ({ caller, params, query }) => listVersions(caller.organizationId, params.id, query));

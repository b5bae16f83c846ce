import { http } from '../../shared/http/handler';
import { listAgents as op } from '../../shared/domain/agents/operations';
import { listAgents } from '../../shared/domain/agents/service';

export const handler = http(op, ({ caller, query }) => listAgents(caller.organizationId, query));

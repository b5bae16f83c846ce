import { http } from '../../shared/http/handler';
import { listAgentTestRuns as op } from '../../shared/domain/agents/operations';
import { listRuns } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params, query }) => listRuns(caller.organizationId, params.id, query));

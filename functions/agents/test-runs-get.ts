import { http } from '../../shared/http/handler';
import { getAgentTestRun as op } from '../../shared/domain/agents/operations';
import { getRun } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params, query }) => getRun(caller.organizationId, params.id, params.run_id, query));

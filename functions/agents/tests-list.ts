import { http } from '../../shared/http/handler';
import { listAgentTests as op } from '../../shared/domain/agents/operations';
import { listTests } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params, query }) => listTests(caller.organizationId, params.id, query));

import { http } from '../../shared/http/handler';
import { getAgentTest as op } from '../../shared/domain/agents/operations';
import { getTest } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params }) => getTest(caller.organizationId, params.id, params.test_id));

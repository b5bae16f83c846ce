import { http } from '../../shared/http/handler';
import { updateAgentTest as op } from '../../shared/domain/agents/operations';
import { updateTest } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params, body }) => updateTest(caller.organizationId, params.id, params.test_id, body));

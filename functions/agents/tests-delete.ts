import { http } from '../../shared/http/handler';
import { deleteAgentTest as op } from '../../shared/domain/agents/operations';
import { deleteTest } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params }) => deleteTest(caller.organizationId, params.id, params.test_id));

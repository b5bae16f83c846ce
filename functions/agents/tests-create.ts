import { http } from '../../shared/http/handler';
import { createAgentTest as op } from '../../shared/domain/agents/operations';
import { createTest } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params, body }) => createTest(caller.organizationId, params.id, body));

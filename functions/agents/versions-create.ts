import { http } from '../../shared/http/handler';
import { publishAgentVersion as op } from '../../shared/domain/agents/operations';
import { publishAgent } from '../../shared/domain/agent-tests/publish';

export const handler = http(op, ({ caller, params, body }) => publishAgent(caller.organizationId, params.id, body ?? {}));

import { http } from '../../shared/http/handler';
import { startAgentTestRun as op } from '../../shared/domain/agents/operations';
import { startRun } from '../../shared/domain/agent-tests/service';

export const handler = http(op, ({ caller, params, body }) => startRun(caller.organizationId, params.id, body ?? { agent_version: 'draft', repeat: 1 }));

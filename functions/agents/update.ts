import { http } from '../../shared/http/handler';
import { updateAgent as op } from '../../shared/domain/agents/operations';
import { updateAgent } from '../../shared/domain/agents/service';

export const handler = http(op, ({ caller, params, body }) => updateAgent(caller.organizationId, params.id, body));

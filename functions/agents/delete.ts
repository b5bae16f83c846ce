import { http } from '../../shared/http/handler';
import { deleteAgent as op } from '../../shared/domain/agents/operations';
import { deleteAgent } from '../../shared/domain/agents/service';

export const handler = http(op, ({ caller, params }) => deleteAgent(caller.organizationId, params.id));

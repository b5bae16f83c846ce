import { http } from '../../shared/http/handler';
import { getAgent as op } from '../../shared/domain/agents/operations';
import { getAgent } from '../../shared/domain/agents/service';

export const handler = http(op, ({ caller, params }) => getAgent(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { createAgent as op } from '../../shared/domain/agents/operations';
import { createAgent } from '../../shared/domain/agents/service';

export const handler = http(op, ({ caller, body }) => createAgent(caller.organizationId, body));

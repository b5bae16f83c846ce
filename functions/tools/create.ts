import { http } from '../../shared/http/handler';
import { createTool as op } from '../../shared/domain/tools/operations';
import { createTool } from '../../shared/domain/tools/service';

export const handler = http(op, ({ caller, body }) => createTool(caller.organizationId, body));

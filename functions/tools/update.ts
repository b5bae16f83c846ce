import { http } from '../../shared/http/handler';
import { updateTool as op } from '../../shared/domain/tools/operations';
import { updateTool } from '../../shared/domain/tools/service';

export const handler = http(op, ({ caller, params, body }) => updateTool(caller.organizationId, params.id, body));

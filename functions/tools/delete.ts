import { http } from '../../shared/http/handler';
import { deleteTool as op } from '../../shared/domain/tools/operations';
import { deleteTool } from '../../shared/domain/tools/service';

export const handler = http(op, ({ caller, params }) => deleteTool(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { getTool as op } from '../../shared/domain/tools/operations';
import { getTool } from '../../shared/domain/tools/service';

export const handler = http(op, ({ caller, params }) => getTool(caller.organizationId, params.id));

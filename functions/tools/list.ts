import { http } from '../../shared/http/handler';
import { listTools as op } from '../../shared/domain/tools/operations';
import { listTools } from '../../shared/domain/tools/service';

export const handler = http(op, ({ caller, query }) => listTools(caller.organizationId, query));

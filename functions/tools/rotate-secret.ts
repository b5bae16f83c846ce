import { http } from '../../shared/http/handler';
import { rotateToolSecret as op } from '../../shared/domain/tools/operations';
import { rotateToolSecret } from '../../shared/domain/tools/service';

export const handler = http(op, ({ caller, params }) => rotateToolSecret(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { getCall as op } from '../../shared/domain/calls/operations';
import { getCall } from '../../shared/domain/calls/service';

export const handler = http(op, ({ params, caller }) => getCall(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { createCall as op } from '../../shared/domain/calls/operations';
import { requestCall } from '../../shared/domain/calls/service';

export const handler = http(op, ({ body, caller }) => requestCall(caller.organizationId, body));

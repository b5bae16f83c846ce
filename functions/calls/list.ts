import { http } from '../../shared/http/handler';
import { listCalls as op } from '../../shared/domain/calls/operations';
import { listCalls } from '../../shared/domain/calls/service';

export const handler = http(op, ({ query, caller }) => listCalls(caller.organizationId, query));

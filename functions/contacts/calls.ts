import { http } from '../../shared/http/handler';
import { listContactCalls as op } from '../../shared/domain/contacts/operations';
import { listContactCalls } from '../../shared/domain/contacts/calls';

export const handler = http(op, ({ caller, params, query }) => listContactCalls(caller.organizationId, params.id, query));

import { http } from '../../shared/http/handler';
import { getContactStats as op } from '../../shared/domain/contacts/operations';
import { getContactStats } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, params }) => getContactStats(caller.organizationId, params.id));

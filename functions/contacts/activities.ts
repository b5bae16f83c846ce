import { http } from '../../shared/http/handler';
import { listContactActivities as op } from '../../shared/domain/contacts/operations';
import { listActivities } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, params }) => listActivities(caller.organizationId, params.id));

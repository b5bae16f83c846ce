import { http } from '../../shared/http/handler';
import { listContacts as op } from '../../shared/domain/contacts/operations';
import { listContacts } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, query }) => listContacts(caller.organizationId, query));

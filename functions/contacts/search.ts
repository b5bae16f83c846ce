import { http } from '../../shared/http/handler';
import { searchContacts as op } from '../../shared/domain/contacts/operations';
import { searchContacts } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, query }) => searchContacts(caller.organizationId, query));

import { http } from '../../shared/http/handler';
import { getContact as op } from '../../shared/domain/contacts/operations';
import { getContact } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, params }) => getContact(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { deleteContact as op } from '../../shared/domain/contacts/operations';
import { deleteContact } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, params }) => deleteContact(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { updateContact as op } from '../../shared/domain/contacts/operations';
import { updateContact } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, params, body }) => updateContact(caller.organizationId, params.id, body));

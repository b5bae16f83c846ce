import { http } from '../../shared/http/handler';
import { createContact as op } from '../../shared/domain/contacts/operations';
import { createContact } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, body }) => createContact(caller.organizationId, body));

import { http } from '../../shared/http/handler';
import { addContactNote as op } from '../../shared/domain/contacts/operations';
import { addNote } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, params, body }) => addNote(caller.organizationId, params.id, body.content));

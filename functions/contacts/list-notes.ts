import { http } from '../../shared/http/handler';
import { listContactNotes as op } from '../../shared/domain/contacts/operations';
import { listNotes } from '../../shared/domain/contacts/service';

export const handler = http(op, ({ caller, params, query }) => listNotes(caller.organizationId, params.id, query));

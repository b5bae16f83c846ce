import { http } from '../../shared/http/handler';
import { addDncEntry as op } from '../../shared/domain/dnc/operations';
import { addDncEntry } from '../../shared/domain/dnc/service';

export const handler = http(op, ({ caller, body }) => addDncEntry(caller.organizationId, body));

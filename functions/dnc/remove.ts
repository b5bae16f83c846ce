import { http } from '../../shared/http/handler';
import { removeDncEntry as op } from '../../shared/domain/dnc/operations';
import { removeDncEntry } from '../../shared/domain/dnc/service';

export const handler = http(op, ({ caller, params }) => removeDncEntry(caller.organizationId, params.phone));

import { http } from '../../shared/http/handler';
import { listDncEntries as op } from '../../shared/domain/dnc/operations';
import { listDncEntries } from '../../shared/domain/dnc/service';

export const handler = http(op, ({ caller, query }) => listDncEntries(caller.organizationId, query));

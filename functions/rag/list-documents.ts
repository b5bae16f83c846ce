import { http } from '../../shared/http/handler';
import { listKbDocuments as op } from '../../shared/domain/rag/operations';
import { listDocuments } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, query }) => listDocuments(caller.organizationId, query));

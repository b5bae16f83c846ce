import { http } from '../../shared/http/handler';
import { getKbDocument as op } from '../../shared/domain/rag/operations';
import { getDocument } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, query }) => getDocument(caller.organizationId, query.org_id, query.doc_id));

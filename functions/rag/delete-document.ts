import { http } from '../../shared/http/handler';
import { deleteKbDocument as op } from '../../shared/domain/rag/operations';
import { deleteDocument } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, query }) => deleteDocument(caller.organizationId, query.org_id, query.doc_id));

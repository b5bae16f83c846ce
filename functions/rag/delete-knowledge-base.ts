import { http } from '../../shared/http/handler';
import { deleteKnowledgeBase as op } from '../../shared/domain/rag/operations';
import { deleteKnowledgeBase } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, params }) => deleteKnowledgeBase(caller.organizationId, params.kb_id));

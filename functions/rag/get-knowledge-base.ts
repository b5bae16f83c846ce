import { http } from '../../shared/http/handler';
import { getKnowledgeBase as op } from '../../shared/domain/rag/operations';
import { getKnowledgeBase } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, params }) => getKnowledgeBase(caller.organizationId, params.kb_id));

import { http } from '../../shared/http/handler';
import { createKnowledgeBase as op } from '../../shared/domain/rag/operations';
import { createKnowledgeBase } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, body }) => createKnowledgeBase(caller.organizationId, body));

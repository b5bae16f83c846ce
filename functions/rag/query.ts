import { http } from '../../shared/http/handler';
import { queryKnowledgeBase as op } from '../../shared/domain/rag/operations';
import { queryKnowledgeBase } from '../../shared/domain/rag/query';

export const handler = http(op, ({ caller, body }) => queryKnowledgeBase(caller.organizationId, body));

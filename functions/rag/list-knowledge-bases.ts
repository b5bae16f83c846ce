import { http } from '../../shared/http/handler';
import { listKnowledgeBases as op } from '../../shared/domain/rag/operations';
import { listKnowledgeBases } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, query }) => listKnowledgeBases(caller.organizationId, query));

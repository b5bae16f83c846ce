import { http } from '../../shared/http/handler';
import { ingestDocuments as op } from '../../shared/domain/rag/operations';
import { ingest } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, body }) => ingest(caller.organizationId, body));

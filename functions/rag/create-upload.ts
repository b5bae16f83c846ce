import { http } from '../../shared/http/handler';
import { createKbUpload as op } from '../../shared/domain/rag/operations';
import { createUpload } from '../../shared/domain/rag/service';

export const handler = http(op, ({ caller, body }) => createUpload(caller.organizationId, body));

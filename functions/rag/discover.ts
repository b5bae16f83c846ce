import { http } from '../../shared/http/handler';
import { discoverUrls as op } from '../../shared/domain/rag/operations';
import { discover } from '../../shared/domain/rag/discover';

export const handler = http(op, ({ body }) => discover(body));

import { http } from '../../shared/http/handler';
import { getConcurrency as op } from '../../shared/domain/concurrency/operations';
import { getConcurrency } from '../../shared/domain/concurrency/service';

export const handler = http(op, ({ caller }) => getConcurrency(caller.organizationId));

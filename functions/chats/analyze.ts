import { http } from '../../shared/http/handler';
import { reanalyzeChat as op } from '../../shared/domain/analytics/operations';
import { reanalyzeChat } from '../../shared/domain/analytics/reanalyze';

export const handler = http(op, ({ params, caller }) => reanalyzeChat(caller.organizationId, params.id));

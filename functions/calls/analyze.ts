import { http } from '../../shared/http/handler';
import { reanalyzeCall as op } from '../../shared/domain/analytics/operations';
import { reanalyzeCall } from '../../shared/domain/analytics/reanalyze';

export const handler = http(op, ({ params, caller }) => reanalyzeCall(caller.organizationId, params.id));

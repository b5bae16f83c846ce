import { http } from '../../shared/http/handler';
import { getTrafficSplitResults as op } from '../../shared/domain/agents/operations';
import { trafficSplitResults } from '../../shared/domain/analytics/split-results';

export const handler = http(op, ({ caller, params, query }) => trafficSplitResults(caller.organizationId, params.id, query));

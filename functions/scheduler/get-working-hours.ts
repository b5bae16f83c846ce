import { http } from '../../shared/http/handler';
import { getWorkingHours as op } from '../../shared/domain/appointments/operations';
import { getWorkingHours } from '../../shared/domain/scheduling/working-hours';

export const handler = http(op, ({ caller, params }) => getWorkingHours(caller.organizationId, params.agent_id));

import { http } from '../../shared/http/handler';
import { putWorkingHours as op } from '../../shared/domain/appointments/operations';
import { putWorkingHours } from '../../shared/domain/scheduling/working-hours';

export const handler = http(op, ({ caller, params, body }) => putWorkingHours(caller.organizationId, params.agent_id, body));

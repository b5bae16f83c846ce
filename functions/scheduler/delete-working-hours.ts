import { http } from '../../shared/http/handler';
import { deleteWorkingHours as op } from '../../shared/domain/appointments/operations';
import { deleteWorkingHours } from '../../shared/domain/scheduling/working-hours';

export const handler = http(op, ({ caller, params }) => deleteWorkingHours(caller.organizationId, params.agent_id));

import { http } from '../../shared/http/handler';
import { getAppointment as op } from '../../shared/domain/appointments/operations';
import { getAppointment } from '../../shared/domain/appointments/service';

export const handler = http(op, ({ caller, params, query }) => getAppointment(caller.organizationId, params.id, query.org_id));

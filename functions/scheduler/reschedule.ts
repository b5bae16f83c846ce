import { http } from '../../shared/http/handler';
import { rescheduleAppointment as op } from '../../shared/domain/appointments/operations';
import { rescheduleAppointment } from '../../shared/domain/appointments/service';

export const handler = http(op, ({ caller, params, body }) => rescheduleAppointment(caller.organizationId, params.id, body));

import { http } from '../../shared/http/handler';
import { bookAppointment as op } from '../../shared/domain/appointments/operations';
import { bookAppointment } from '../../shared/domain/appointments/service';

export const handler = http(op, ({ caller, body }) => bookAppointment(caller.organizationId, body));

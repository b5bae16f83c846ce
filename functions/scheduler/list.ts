import { http } from '../../shared/http/handler';
import { listAppointments as op } from '../../shared/domain/appointments/operations';
import { listAppointments } from '../../shared/domain/appointments/service';

export const handler = http(op, ({ caller, query }) => listAppointments(caller.organizationId, query));

import { http } from '../../shared/http/handler';
import { cancelAppointment as op } from '../../shared/domain/appointments/operations';
import { cancelAppointment } from '../../shared/domain/appointments/service';

export const handler = http(op, ({ caller, params, body }) => cancelAppointment(caller.organizationId, params.id, body.reason));

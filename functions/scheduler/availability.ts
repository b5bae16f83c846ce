import { http } from '../../shared/http/handler';
import { getAvailability as op } from '../../shared/domain/appointments/operations';
import { availability } from '../../shared/domain/appointments/service';

export const handler = http(op, ({ caller, query }) => availability(caller.organizationId, query));

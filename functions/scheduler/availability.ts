import { http } from '../../shared/http/handler';
import { getAvailability as op } from '../../shared/domain/appointments/operations';
import { availability } from '../../shared/domain/appointments/service';
// Every request computes dates in a time zone: load them (luxon) at cold start, not on the first request.
import '../../shared/domain/scheduling/slots';
import '../../shared/domain/scheduling/zoned';

export const handler = http(op, ({ caller, query }) => availability(caller.organizationId, query));

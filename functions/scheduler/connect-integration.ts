import { http } from '../../shared/http/handler';
import { connectSchedulingIntegration as op } from '../../shared/domain/appointments/operations';
import { connectIntegration } from '../../shared/domain/scheduling/integration';

export const handler = http(op, ({ caller, body }) => connectIntegration(caller.organizationId, body));

import { http } from '../../shared/http/handler';
import { getSchedulingIntegration as op } from '../../shared/domain/appointments/operations';
import { getIntegration } from '../../shared/domain/scheduling/integration';

export const handler = http(op, ({ caller }) => getIntegration(caller.organizationId));

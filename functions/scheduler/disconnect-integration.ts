import { http } from '../../shared/http/handler';
import { disconnectSchedulingIntegration as op } from '../../shared/domain/appointments/operations';
import { disconnectIntegration } from '../../shared/domain/scheduling/integration';

export const handler = http(op, ({ caller }) => disconnectIntegration(caller.organizationId));

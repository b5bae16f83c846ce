import { http } from '../../shared/http/handler';
import { listEvents as op } from '../../shared/domain/events/operations';
import { listEvents } from '../../shared/domain/events/service';

export const handler = http(op, ({ caller, query }) => listEvents(caller.organizationId, query));

import { http } from '../../shared/http/handler';
import { getEvent as op } from '../../shared/domain/events/operations';
import { getEvent } from '../../shared/domain/events/service';

export const handler = http(op, ({ caller, params }) => getEvent(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { updatePhoneNumber as op } from '../../shared/domain/phone-numbers/operations';
import { updatePhoneNumber } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, params, body }) => updatePhoneNumber(caller.organizationId, params.id, body));

import { http } from '../../shared/http/handler';
import { getPhoneNumber as op } from '../../shared/domain/phone-numbers/operations';
import { getPhoneNumber } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, params }) => getPhoneNumber(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { buyPhoneNumber as op } from '../../shared/domain/phone-numbers/operations';
import { buyPhoneNumber } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, body }) => buyPhoneNumber(caller.organizationId, body));

import { http } from '../../shared/http/handler';
import { importPhoneNumber as op } from '../../shared/domain/phone-numbers/operations';
import { importPhoneNumber } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, body }) => importPhoneNumber(caller.organizationId, body));

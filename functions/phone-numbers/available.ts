import { http } from '../../shared/http/handler';
import { listAvailablePhoneNumbers as op } from '../../shared/domain/phone-numbers/operations';
import { listAvailablePhoneNumbers } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, query }) => listAvailablePhoneNumbers(caller.organizationId, query));

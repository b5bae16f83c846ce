import { http } from '../../shared/http/handler';
import { listPhoneNumbers as op } from '../../shared/domain/phone-numbers/operations';
import { listPhoneNumbers } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, query }) => listPhoneNumbers(caller.organizationId, query));

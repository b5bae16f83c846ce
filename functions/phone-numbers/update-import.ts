import { http } from '../../shared/http/handler';
import { updateImportedPhoneNumber as op } from '../../shared/domain/phone-numbers/operations';
import { updateImportedPhoneNumber } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, params, body }) => updateImportedPhoneNumber(caller.organizationId, params.id, body));

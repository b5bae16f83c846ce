import { http } from '../../shared/http/handler';
import { releasePhoneNumber as op } from '../../shared/domain/phone-numbers/operations';
import { releasePhoneNumber } from '../../shared/domain/phone-numbers/service';

export const handler = http(op, ({ caller, params }) => releasePhoneNumber(caller.organizationId, params.id));

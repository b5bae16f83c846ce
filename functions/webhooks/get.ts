import { http } from '../../shared/http/handler';
import { getWebhook as op } from '../../shared/domain/webhooks/operations';
import { getWebhook } from '../../shared/domain/webhooks/service';

export const handler = http(op, ({ caller, params }) => getWebhook(caller.organizationId, params.id));

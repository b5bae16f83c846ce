import { http } from '../../shared/http/handler';
import { updateWebhook as op } from '../../shared/domain/webhooks/operations';
import { updateWebhook } from '../../shared/domain/webhooks/service';

export const handler = http(op, ({ caller, params, body }) => updateWebhook(caller.organizationId, params.id, body));

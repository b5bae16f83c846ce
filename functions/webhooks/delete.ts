import { http } from '../../shared/http/handler';
import { deleteWebhook as op } from '../../shared/domain/webhooks/operations';
import { deleteWebhook } from '../../shared/domain/webhooks/service';

export const handler = http(op, ({ caller, params }) => deleteWebhook(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { testWebhook as op } from '../../shared/domain/webhooks/operations';
import { testWebhook } from '../../shared/domain/webhooks/deliveries';

export const handler = http(op, ({ caller, params }) => testWebhook(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { redeliverWebhook as op } from '../../shared/domain/webhooks/operations';
import { redeliver } from '../../shared/domain/webhooks/deliveries';

export const handler = http(op, ({ caller, params }) => redeliver(caller.organizationId, params.id, params.delivery_id));

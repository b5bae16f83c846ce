import { http } from '../../shared/http/handler';
import { listWebhookDeliveries as op } from '../../shared/domain/webhooks/operations';
import { listDeliveries } from '../../shared/domain/webhooks/deliveries';

export const handler = http(op, ({ caller, params, query }) => listDeliveries(caller.organizationId, params.id, query));

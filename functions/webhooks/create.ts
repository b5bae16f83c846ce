import { http } from '../../shared/http/handler';
import { createWebhook as op } from '../../shared/domain/webhooks/operations';
import { createWebhook } from '../../shared/domain/webhooks/service';

export const handler = http(op, ({ caller, body }) => createWebhook(caller.organizationId, body));

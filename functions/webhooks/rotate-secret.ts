import { http } from '../../shared/http/handler';
import { rotateWebhookSecret as op } from '../../shared/domain/webhooks/operations';
import { rotateWebhookSecret } from '../../shared/domain/webhooks/service';

export const handler = http(op, ({ caller, params }) => rotateWebhookSecret(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { listWebhooks as op } from '../../shared/domain/webhooks/operations';
import { listWebhooks } from '../../shared/domain/webhooks/service';

export const handler = http(op, ({ caller, query }) => listWebhooks(caller.organizationId, query));

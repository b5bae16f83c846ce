import { http } from '../../shared/http/handler';
import { createCampaign as op } from '../../shared/domain/campaigns/operations';
import { createCampaign } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, body }) => createCampaign(caller.organizationId, body));

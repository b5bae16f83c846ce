import { http } from '../../shared/http/handler';
import { updateCampaign as op } from '../../shared/domain/campaigns/operations';
import { updateCampaign } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params, body }) => updateCampaign(caller.organizationId, params.id, body));

import { http } from '../../shared/http/handler';
import { startCampaign as op } from '../../shared/domain/campaigns/operations';
import { startCampaign } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params }) => startCampaign(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { pauseCampaign as op } from '../../shared/domain/campaigns/operations';
import { pauseCampaign } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params }) => pauseCampaign(caller.organizationId, params.id));

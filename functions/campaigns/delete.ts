import { http } from '../../shared/http/handler';
import { deleteCampaign as op } from '../../shared/domain/campaigns/operations';
import { deleteCampaign } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params }) => deleteCampaign(caller.organizationId, params.id));

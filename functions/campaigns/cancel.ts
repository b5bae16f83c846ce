import { http } from '../../shared/http/handler';
import { cancelCampaign as op } from '../../shared/domain/campaigns/operations';
import { cancelCampaign } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params }) => cancelCampaign(caller.organizationId, params.id));

import { http } from '../../shared/http/handler';
import { getCampaign as op } from '../../shared/domain/campaigns/operations';
import { getCampaign } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params }) => getCampaign(caller.organizationId, params.id));

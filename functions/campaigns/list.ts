import { http } from '../../shared/http/handler';
import { listCampaigns as op } from '../../shared/domain/campaigns/operations';
import { listCampaigns } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, query }) => listCampaigns(caller.organizationId, query));

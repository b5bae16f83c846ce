import { http } from '../../shared/http/handler';
import { listCampaignContacts as op } from '../../shared/domain/campaigns/operations';
import { listCampaignContacts } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params, query }) => listCampaignContacts(caller.organizationId, params.id, query));

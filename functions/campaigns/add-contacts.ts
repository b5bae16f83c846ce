import { http } from '../../shared/http/handler';
import { addCampaignContacts as op } from '../../shared/domain/campaigns/operations';
import { addCampaignContacts } from '../../shared/domain/campaigns/service';

export const handler = http(op, ({ caller, params, body }) => addCampaignContacts(caller.organizationId, params.id, body.contact_ids));

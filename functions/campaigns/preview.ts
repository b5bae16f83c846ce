import { http } from '../../shared/http/handler';
import { previewCampaign as op } from '../../shared/domain/campaigns/operations';
import { previewCampaign } from '../../shared/domain/campaigns/preview';

export const handler = http(op, ({ caller, params, body }) => previewCampaign(caller.organizationId, params.id, body));

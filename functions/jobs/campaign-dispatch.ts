import { sqsWorker } from '../../shared/jobs/worker';
import { dispatchCampaign, type DispatchMessage } from '../../shared/domain/campaigns/engine';

export const handler = sqsWorker<DispatchMessage>(async (m) => {
  await dispatchCampaign(m.organization_id, m.campaign_id, undefined, { tick: m.tick === true, outcome: m.outcome === true });
});

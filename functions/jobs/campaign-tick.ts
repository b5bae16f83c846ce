import { runTick } from '../../shared/domain/campaigns/engine';
import { scheduledJob } from '../../shared/telemetry/jobs';

// Every minute: one campaign-dispatch message per started campaign (windows open, leases recover).
export const handler = scheduledJob('campaign-tick', async () => {
  await runTick();
});

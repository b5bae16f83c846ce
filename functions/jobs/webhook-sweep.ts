import { sweepWebhooks } from '../../shared/domain/webhooks/deliveries';
import { scheduledJob } from '../../shared/telemetry/jobs';

// Every minute: fan-out of events a crash left undispatched, and delivery attempts whose wait has come.
export const handler = scheduledJob('webhook-sweep', async () => {
  await sweepWebhooks();
});

import { sweepWebhooks } from '../../shared/domain/webhooks/deliveries';

// Every minute: fan-out of events a crash left undispatched, and delivery attempts whose wait has come.
export const handler = async () => {
  await sweepWebhooks();
};
